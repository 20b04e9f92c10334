"""Trusted replay of one run entry against the device rules, and the metrics it implies.

``verify_run(run, trace, device, timing=...)`` never trusts a reported number. It walks the
event log in order, checks every submission against the device rules, rebuilds each request's
token times from the events that produced them, recomputes the metrics with the lab's own
``servesim.metrics`` and compares what the run reports with that recomputation.

Problems come in two kinds:

- ``INVALID_SCHEDULE``: the timeline breaks a device rule (overlap, prefill before arrival or
  past ``inputTokens``, decode before the first token, a wrong number of tokens, a submission
  whose tokens are not at its end, a wrong duration in ``virtual`` timing);
- ``INCONSISTENT_STATS``: the timeline is valid but a reported figure (``ttftMs``, ``itlMs``,
  ``events[].endMs``, a summary field, ...) disagrees with it. ``Problem.statistic`` names it.

``timing="virtual"`` (the simulator) checks each duration exactly; ``timing="measured"``
(a real GPU run) takes durations from the log and keeps every other check.

The work is split by job: ``problems`` (findings and tolerances), ``replay`` (the event-log
replay) and ``statcheck`` (statistics consistency), all in this package; this module runs them in
order and stops at the first stage that finds the schedule invalid.
"""

from __future__ import annotations

import math

import servesim

from .problems import EPS_MS, Collector, Problem, ProblemKind, same_value
from .replay import Replay, replay_events
from .replay_checks import check_token_times, requests_match_trace
from .statcheck import REQUEST_STATS, check_statistics
from .wording import describe_batch

# the names other modules and tests import from here
__all__ = [
    "EPS_MS",
    "REQUEST_STATS",
    "RUN_LIMITS",
    "Problem",
    "ProblemKind",
    "Replay",
    "describe_batch",
    "replay_run",
    "same_value",
    "verify_run",
]


def _wait_ms(run: dict) -> float:
    """The wait window the run's policy params grant (0 when none, or not a number >= 0)."""
    value = (run.get("params") or {}).get("wait_ms", 0)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
    return float(value) if ok and math.isfinite(value) else 0.0


RUN_LIMITS = "run"  # ``limits=RUN_LIMITS``: the limits the run entry states (staff checks)


def verify_run(run: dict, trace, device: dict, **options) -> list[Problem]:
    """Replay ``run`` (one entry of a run file, schema-valid) against ``trace`` on ``device``.

    ``trace`` is a parsed ``servesim.Trace`` or a trace document; ``device`` a device profile in
    its JSON form; ``options`` those of ``replay_run``. Returns the problems found,
    invalid-schedule ones first (empty: all good).
    """
    return replay_run(run, trace, device, **options)[0]


def replay_run(
    run: dict,
    trace,
    device: dict,
    *,
    timing: str = "virtual",
    limits: dict | str | None = RUN_LIMITS,
) -> tuple[list[Problem], Replay]:
    """``verify_run`` plus what the replay rebuilt (for comparison with golden results).

    ``timing``: "virtual" checks every duration, "measured" takes them from the log. ``limits``:
    the engine limits to replay (``{"budget", "queueCap"}``; None: no limit; ``RUN_LIMITS``:
    what the run entry states, for runs from elsewhere; the grader passes the case's). A run
    whose policy has a wait window (``params.wait_ms``, static batching) may leave the device
    idle that long; the grader holds the run's params to the case's. A compact run entry is
    expanded first (``servesim.compact``), so both formats replay alike.
    """
    from servesim.compact import expand_run

    run = expand_run(run)
    if timing not in ("virtual", "measured"):
        raise ValueError(f"timing must be 'virtual' or 'measured', got {timing!r}")
    if isinstance(trace, dict):
        trace = servesim.parse_trace(trace, source="trace")
    profile = servesim.DeviceProfile.from_json(device, source="device")
    found = Collector()
    replay = Replay()

    requests = run.get("requests", [])
    if not requests_match_trace(requests, trace, found):
        return found.problems(), replay
    replay_events(
        run.get("events", []),
        trace,
        profile,
        timing=timing,
        found=found,
        replay=replay,
        requests=requests,
        limits=run.get("limits") if limits == RUN_LIMITS else limits,
        wait_ms=_wait_ms(run),
    )
    if found.has(ProblemKind.INVALID_SCHEDULE):
        return found.problems(), replay
    check_token_times(requests, replay, found)
    if found.has(ProblemKind.INVALID_SCHEDULE):
        return found.problems(), replay
    check_statistics(run, trace, replay, found)
    return found.problems(), replay
