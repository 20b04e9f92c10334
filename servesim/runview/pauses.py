"""The streams a run held paused at each decision time, read from each request's ``pausedMs``
by the engine's own ``servesim.streaming.pause_spans`` (the viewer's paused-streams column)."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from ..streaming import pause_spans


class PausedStreams:
    """The streams paused at each decision time, asked in time order (``pause_spans``)."""

    def __init__(self, requests: list[dict]):
        self.spans = sorted(
            (start, order, end, r["id"])
            for order, r in enumerate(requests)
            for start, end in pause_spans(r.get("pausedMs"), r.get("statusMs"))
        )
        self.next = 0
        self.open: list[tuple[float, tuple, str]] = []  # (end, (start, order), id) heap

    def at(self, t: float) -> Sequence[str]:
        spans, open_ = self.spans, self.open
        while self.next < len(spans) and spans[self.next][0] <= t:
            start, order, end, rid = spans[self.next]
            heapq.heappush(open_, (end, (start, order), rid))
            self.next += 1
        while open_ and open_[0][0] <= t:
            heapq.heappop(open_)
        if not open_:
            return ()
        return [rid for _, _, rid in sorted(open_, key=lambda span: span[1])]
