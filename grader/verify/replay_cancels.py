"""The engine's client-cancel rule (trace ``cancelMs``, unit 09), replayed from the run file.

A client cancel is seen at the first decision point at or after its time: the end of the step
that runs over it, or, when the device idles over it (a policy's wait), some point of that idle
time up to the next step's start. A request still live then must be reported cancelled there;
one that has already left (completed, or cancelled by its deadline) is untouched: leaving is
terminal. Its device pages (or host pages, when swapped out) are released once.

``CancelChecks`` is mixed into the replay's walker (``replay``), which holds the state it reads
and changes: ``found``, ``reqs``, ``reported``, ``arrivals`` and ``cancelled``; pages go
through ``_pages_leave`` (``replay_prefix``).
"""

from __future__ import annotations

import heapq

from .problems import EPS_MS, ProblemKind, close_ms, fmt_ms

BAD = ProblemKind.INVALID_SCHEDULE


def client_cancels(trace, reported) -> list[tuple[float, int, str]]:
    """A heap of ``(due, trace order, id)``, one per request with ``cancelMs`` not rejected."""
    heap = [
        (r.arrival_ms + r.cancel_ms, order, r.id)
        for order, r in enumerate(trace.requests)
        if getattr(r, "cancel_ms", None) is not None and reported[r.id][0] != "rejected"
    ]
    heapq.heapify(heap)
    return heap


class CancelChecks:
    """Client cancels due by a decision point, checked against the reported statuses."""

    def _cancel_clients(self, clock: float, *, idle_from: float | None = None) -> None:
        """Apply every client cancel due by ``clock``: a step end (``idle_from`` None), or the
        start of a step after the device idled from ``idle_from``."""
        heap = self.client_cancels
        while heap and heap[0][0] <= clock + EPS_MS:
            due, _, rid = heapq.heappop(heap)
            st = self.reqs[rid]
            if st.gone:
                continue  # it left first: a late cancel does nothing
            status, at = self.reported[rid]
            if idle_from is None:
                ok = status == "cancelled" and close_ms(at, clock)
                when = f"at {fmt_ms(clock)}, the first step end after it"
            else:
                ok = status == "cancelled" and at is not None and due - EPS_MS <= at
                ok = ok and at <= clock + EPS_MS
                when = f"between {fmt_ms(due)} and the next step's start ({fmt_ms(clock)})"
            if not ok:
                self.found.add(
                    BAD,
                    "cancel",
                    f"the client of '{rid}' cancels at {fmt_ms(due)}: it must be reported "
                    f"cancelled {when}",
                    clock,
                )
                continue
            self._terminate(rid)

    def _terminate(self, rid: str) -> None:
        """``rid`` leaves now, cancelled: what it holds is released once."""
        st = self.reqs[rid]
        self._pages_leave([rid], ordered=True)
        st.finish()
        self.arrivals.left(rid)
        self.cancelled.add(rid)
