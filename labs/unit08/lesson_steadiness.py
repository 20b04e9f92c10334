"""The protocol of the lesson's single-trace comparisons, and whether each of their runs was steady.

The burst comparison (budgeted vs paged, section 3) and the timed one (timed vs budgeted,
section 6) are not protocol sweeps: each policy runs once on a fixed trace with its own arrival
times, so there is no replication and no interval. The page says so, and judges every run with
the lab's steady-state check (``measure.steady_state``, the one the sweep applies) at the lesson
protocol's tolerance. Its window is the protocol's (warm-up and cool-down requests left out)
when the trace has requests to spare for one, else the whole run (from the first arrival to the
last, ``WHOLE_RUN``). A run that is not steady gets the protocol's verdict for such runs: its
figures describe that run, and a conclusion from it is "not yet known".
"""

from __future__ import annotations

from servesim.protocol import measurement_window

WHOLE_RUN = (0, 1)  # (warm-up, cool-down) requests: every arrival but the last is in the window


def steadiness(measure, protocol, requests: list[dict]) -> dict:
    """One run's steady-state check: the window used, the backlog of each half and the verdict."""
    warmup, cooldown = protocol.warmup_requests, protocol.cooldown_requests
    if len(requests) <= warmup + cooldown + 1:
        warmup, cooldown = WHOLE_RUN
    window = measurement_window([r["arrivalMs"] for r in requests], warmup, cooldown)
    check = measure.steady_state(
        requests, window.start_ms, window.end_ms, protocol.steady_tolerance
    )
    first, second = check.first_half_in_system, check.second_half_in_system
    return {
        "requests": len(requests),
        "whole_run": (warmup, cooldown) == WHOLE_RUN,
        "first": first,
        "second": second,
        "growth": second / first if first else None,
        "steady": bool(check.steady),
    }


def single_runs(measure, protocol, kv: dict, timed: dict) -> dict:
    """Each single-trace comparison's runs judged by :func:`steadiness`: the burst pair, the
    other burst draws (how many have both runs steady, and among those how many paged
    completes more), and the timed pair."""
    pair = ("budgeted", "paged")
    burst = {p: steadiness(measure, protocol, kv["runs"][p].run["requests"]) for p in pair}
    steady_draws = [
        d
        for d in kv["draws"]
        if all(steadiness(measure, protocol, d[p]["run"].run["requests"])["steady"] for p in pair)
    ]
    more = sum(
        d["paged"]["run"].summary["completed"] > d["budgeted"]["run"].summary["completed"]
        for d in steady_draws
    )
    timed_runs = {
        p: steadiness(measure, protocol, r.run["requests"]) for p, r in timed["runs"].items()
    }
    return {
        "tolerance": protocol.steady_tolerance,
        "burst": burst,
        "burst_steady": all(r["steady"] for r in burst.values()),
        "draws_steady": len(steady_draws),
        "draws_steady_paged_more": more,
        "timed": timed_runs,
        "timed_steady": all(r["steady"] for r in timed_runs.values()),
    }
