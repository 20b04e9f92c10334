"""The engine's arrival rules, replayed from the run file: when each request is admitted, the
queue cap, and when the device may start a step.

The engine admits every request due by the clock at each decision point (a step end, or the
arrival it jumps to when nothing is live), in arrival order with ties in trace order. A request
that arrives while ``queueCap`` admitted requests wait without having started prefill is
rejected. While any admitted request is live (not finished, not cancelled) the next step starts
when the previous one ends; an idle device jumps to the next arrival that is not rejected.
"""

from __future__ import annotations

from .problems import Collector, ProblemKind, fmt_ms

BAD = ProblemKind.INVALID_SCHEDULE


class ArrivalReplay:
    """Admissions in the replay's own order, and the two rules that depend on them."""

    def __init__(self, trace, reported: dict, queue_cap: int | None, found: Collector):
        self.order = sorted(
            range(len(trace.requests)), key=lambda n: (trace.requests[n].arrival_ms, n)
        )
        self.requests, self.reported = trace.requests, reported
        self.queue_cap, self.found = queue_cap, found
        self.next = 0  # position in ``order`` of the next request not yet admitted
        self.open = 0  # no request before this position (and after ``next``) is admitted
        self.live: set[str] = set()  # admitted, not finished or cancelled
        self.unstarted: set[str] = set()  # admitted, no prefill chunk ever

    def admit_until(self, clock: float) -> None:
        """Admit every request due by ``clock``; one that finds the queue full must be rejected."""
        while self.next < len(self.order):
            spec = self.requests[self.order[self.next]]
            if spec.arrival_ms > clock:
                return
            self.next += 1
            if self.reported[spec.id][0] == "rejected":
                continue
            waiting = len(self.unstarted)
            if self.queue_cap is not None and waiting >= self.queue_cap:
                self.found.add(
                    BAD,
                    "queueCap",
                    f"'{spec.id}' arrives at {fmt_ms(spec.arrival_ms)} while {waiting} requests "
                    f"wait unstarted (queue cap {self.queue_cap}): it must be rejected",
                    spec.arrival_ms,
                )
            self.live.add(spec.id)
            self.unstarted.add(spec.id)

    def started(self, rid: str) -> None:
        self.unstarted.discard(rid)

    def left(self, rid: str) -> None:
        """A request finished or was cancelled."""
        self.live.discard(rid)
        self.unstarted.discard(rid)

    def earliest_start(self, prev_end: float) -> float | None:
        """When the engine starts the next step: at ``prev_end`` while anything is live, else at
        the next arrival that is not rejected (None: no request is left to arrive)."""
        if self.live:
            return prev_end
        self.open = max(self.open, self.next)
        while self.open < len(self.order):  # rejected requests stay rejected: skip them once
            spec = self.requests[self.order[self.open]]
            if self.reported[spec.id][0] != "rejected":
                return max(prev_end, spec.arrival_ms)
            self.open += 1
        return None
