"""The engine's leaving rules at a decision point, replayed from the run file: deadlines
(trace ``deadlineMs``) and client cancels (trace ``cancelMs``), as ``servesim.decision`` orders
them.

A request without a first token at a step end past its deadline must be reported cancelled
there. A client cancel is seen at the first decision point at or after its time: the end of the step
that runs over it, or, when the device idles over it (a policy's wait), some point of that idle
time up to the next step's start. A request still live then must be reported cancelled there;
one that has already left (completed, or cancelled by its deadline) is untouched: leaving is
terminal. Its device pages (or host pages, when swapped out) are released once.

``CancelChecks`` is mixed into the replay's walker (``replay``), which holds the state it reads
and changes: ``found``, ``reqs``, ``reported``, ``arrivals``, ``cancelled``, ``deadlines``,
``client_cancels`` and ``idle_window``; pages go through ``_pages_leave`` (``replay_prefix``).
"""

from __future__ import annotations

import heapq

from .problems import EPS_MS, ProblemKind, close_ms, fmt_ms

BAD = ProblemKind.INVALID_SCHEDULE


def due_heap(trace, reported, field: str) -> list[tuple[float, int, str]]:
    """A heap of ``(due, trace order, id)``: each request's arrival plus its ``field``
    (``deadline_ms`` or ``cancel_ms``), for every request that has one and is not rejected."""
    heap = [
        (r.arrival_ms + getattr(r, field), order, r.id)
        for order, r in enumerate(trace.requests)
        if getattr(r, field, None) is not None and reported[r.id][0] != "rejected"
    ]
    heapq.heapify(heap)
    return heap


class CancelChecks:
    """Client cancels due by a decision point, checked against the reported statuses."""

    client_left: set[str]  # ids whose client's cancel has been seen (``_cancel_clients``)

    def expire_deadlines(self, end: float) -> None:
        """The engine's deadline rule, applied to the replay's own state at this step end."""
        heap = self.deadlines
        while heap and heap[0][0] < end:
            rid = heapq.heappop(heap)[2]
            st = self.reqs[rid]
            if st.times or st.gone or st.spec.arrival_ms > end:
                continue
            status, at = self.reported[rid]
            if status != "cancelled" or not close_ms(at, end):
                self.found.add(
                    BAD,
                    "deadline",
                    f"'{rid}' has no first token at {fmt_ms(end)}, past its deadline "
                    f"({fmt_ms(st.spec.arrival_ms + st.spec.deadline_ms)}): it must be "
                    "cancelled there",
                    end,
                )
                continue
            self._pages_leave([rid], ordered=True)
            st.finish()
            self.arrivals.left(rid)
            self.cancelled.add(rid)

    def cancel_clients(self, clock: float) -> None:
        """The client-cancel rule at a decision point: a step end, or one while idling."""
        if self.idle_window is None:
            self._cancel_clients(clock)
        else:
            self._cancel_clients(clock, idle_from=self.idle_window[0], until=self.idle_window[1])

    def _cancel_clients(
        self, clock: float, *, idle_from: float | None = None, until: float | None = None
    ) -> None:
        """Apply every client cancel due by ``clock``: a step end (``idle_from`` None), or a
        decision point while the device idles from ``idle_from`` to the next step's start
        ``until`` (by then at the latest the engine has seen it). A request whose client
        cancels has left by the rules, whatever the run reports (``client_left``)."""
        heap = self.client_cancels
        while heap and heap[0][0] <= clock + EPS_MS:
            due, _, rid = heapq.heappop(heap)
            st = self.reqs[rid]
            if st.gone:
                continue  # it left first: a late cancel does nothing
            self.client_left.add(rid)
            status, at = self.reported[rid]
            if idle_from is None:
                ok = status == "cancelled" and close_ms(at, clock)
                when = f"at {fmt_ms(clock)}, the first step end after it"
            else:
                until = clock if until is None else until
                ok = status == "cancelled" and at is not None and due - EPS_MS <= at
                ok = ok and at <= until + EPS_MS
                when = f"between {fmt_ms(due)} and the next step's start ({fmt_ms(until)})"
            if not ok:
                self.found.add(
                    BAD,
                    "cancel",
                    f"the client of '{rid}' cancels at {fmt_ms(due)}: it must be reported "
                    f"cancelled {when}",
                    until if idle_from is not None else clock,
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
