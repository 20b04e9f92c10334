"""Fault switches: realistic logging and statistics bugs for students to catch.

Each fault leaves the schedule and the token times alone and corrupts only what is reported
about them, so the printed table disagrees with the raw timeline in ``tokenTimesMs``/``events``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Fault:
    name: str
    summary: str
    apply: Callable[[dict], None]  # edits one run (requests and events) in place


def _completed(run: dict) -> list[dict]:
    """The requests a latency fault can touch (rejected and cancelled ones have no figures)."""
    return [r for r in run["requests"] if r.get("status", "completed") == "completed"]


def _ttft_from_prefill_start(run: dict) -> None:
    started: dict[str, float] = {}
    for event in run["events"]:
        for chunk in event["prefill"]:
            started.setdefault(chunk["id"], event["startMs"])
    for req in _completed(run):
        req["ttftMs"] = req["firstTokenMs"] - started[req["id"]]


def _itl_with_first_gap(run: dict) -> None:
    for req in _completed(run):
        req["itlMs"] = [req["firstTokenMs"] - req["arrivalMs"], *req["itlMs"]]
        req["maxItlMs"] = max(req["itlMs"])


def _tpot_over_n(run: dict) -> None:
    for req in _completed(run):
        times = req["tokenTimesMs"]
        req["tpotMs"] = (times[-1] - times[0]) / len(times)


def _events_without_overhead(run: dict) -> None:
    overhead = run["device"]["overheadMs"]
    for event in run["events"]:
        event["endMs"] = event["endMs"] - overhead


def _e2e_from_first_token(run: dict) -> None:
    for req in _completed(run):
        req["e2eMs"] = req["finishMs"] - req["firstTokenMs"]


FAULTS = {
    fault.name: fault
    for fault in (
        Fault(
            "ttft-from-prefill-start",
            "TTFT counted from the start of the request's first prefill, not from its arrival",
            _ttft_from_prefill_start,
        ),
        Fault(
            "itl-with-first-gap",
            "the ITL list starts with the arrival-to-first-token gap",
            _itl_with_first_gap,
        ),
        Fault(
            "tpot-over-n",
            "TPOT divides by the output token count O instead of O - 1",
            _tpot_over_n,
        ),
        Fault(
            "events-without-overhead",
            "event end times leave out the per-submission overhead",
            _events_without_overhead,
        ),
        Fault(
            "e2e-from-first-token",
            "E2E measured from the first token instead of from arrival",
            _e2e_from_first_token,
        ),
    )
}
