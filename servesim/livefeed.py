"""Requests handed to a running engine one by one (a live source), and a second engine that
follows the same run from its journal.

A live source (``grader.serve``) receives items while the engine runs: ``("request",
Request)``, ``("cancel", (id, at_ms))`` (the client went away) and ``("read", id)`` (the client
read its next streamed event), each with the time it was stamped. ``Feed.apply`` is what an
item does to the run, the one place that says so.

A policy served from a sandboxed child runs in an engine of its own in that child, which must
see exactly what the server's engine sees, call for call. The server's source writes a journal
entry for each call its engine makes on it, with the items that call took in and its answer,
and one for each step's measured duration; ``Mirror`` is an ``Arrivals`` that answers the same
calls from those entries, in the same order. With the same device, the same options and the
same answers from the policy, the two engines then make the same decisions at the same times:
the child's view is the server's, and the child's policy only answers which batch.

Journal entries (JSON lists): ``["b", items, result]`` (``bool(arrivals)``), ``["n", items]``
(``next_ms``), ``["p", items]`` (``pop_due``), ``["i", clock]`` (``idle``) and ``["x", ms,
{id: outputTokens}]`` (a step ran for ``ms``; a stop string cut those requests short).
"""

from __future__ import annotations

import math

from .arrivals import Arrivals
from .sequence import Phase, Sequence
from .trace import Request

# a disconnect stamped at its request's own arrival still cancels after it (cancelMs > 0)
MIN_CANCEL_MS = 1e-6


class Feed(Arrivals):
    """An ``Arrivals`` that grows while the run goes on (``apply``)."""

    def __init__(self):
        super().__init__(trace=_NoRequests())
        self._by_id: dict[str, Sequence] = {}

    def apply(self, kind: str, item, stamp: float) -> None:
        """One handed-over item (see the module), in the order they were stamped."""
        if kind == "request":
            seq = Sequence.of(item, len(self.sequences))
            self._by_id[seq.id] = seq
            self._push(seq)
        elif kind == "read":
            seq = self._by_id[item]
            seq.reads_ms = (*seq.reads_ms, stamp - seq.arrival_ms)
        else:
            self._cancel(*item)

    def sequence(self, rid: str) -> Sequence:
        """The engine's sequence of request ``rid``."""
        return self._by_id[rid]

    def _cancel(self, rid: str, at_ms: float) -> None:
        """Before admission the request is admitted with this cancel; after admission it is a
        late cancel; after it left, nothing."""
        seq = self._by_id.get(rid)
        if seq is None or seq.status is not None or seq.cancel_ms is not None:
            return
        seq.cancel_ms = max(at_ms - seq.arrival_ms, MIN_CANCEL_MS)
        if seq.phase is not Phase.PENDING:  # admitted: the engine's cancel heap takes it
            self.late_cancels.append(seq)

    def next_known(self) -> float:
        return self._heap[0][0] if self._heap else math.inf


def encode(items) -> list:
    """Handed-over items as JSON values (a request as its fields, in ``Request`` order)."""
    return [[kind, list(item) if kind == "request" else item, stamp] for kind, item, stamp in items]


def decode(items) -> list:
    """``encode``'s inverse."""
    return [(kind, _request(item) if kind == "request" else item, s) for kind, item, s in items]


def _request(fields: list) -> Request:
    request = Request(*fields)
    prefix = tuple(tuple(segment) for segment in request.prefix)
    reads = None if request.reads_ms is None else tuple(request.reads_ms)
    return request._replace(prefix=prefix, reads_ms=reads)


class JournalError(RuntimeError):
    """The journal and this engine's calls disagree: the two runs are not the same run."""


class Mirror(Feed):
    """The engine's source in the child: every call answered from the journal (``entry(kind)``
    returns the next entry, which must be of that kind)."""

    def __init__(self, entry):
        super().__init__()
        self._entry = entry

    def _take(self, kind: str) -> list:
        got = self._entry()
        if not isinstance(got, list) or not got or got[0] != kind:
            raise JournalError(f"expected a {kind!r} entry, got {str(got)[:80]}")
        return got

    def _feed(self, kind: str) -> list:
        got = self._take(kind)
        for item in decode(got[1]):
            self.apply(*item)
        return got

    def __bool__(self) -> bool:
        return bool(self._feed("b")[2])

    def next_ms(self) -> float:
        self._feed("n")
        return self.next_known()

    def pop_due(self, clock: float):
        self._feed("p")
        return super().pop_due(clock)

    def idle(self, clock: float, wake: float) -> float:
        return float(self._take("i")[1])

    def execute(self, batch, context) -> float:
        """The step's duration as the server measured it (the engine's ``execute`` hook)."""
        _, took, stops = self._take("x")
        for rid, tokens in stops.items():
            self._by_id[rid].output_tokens = tokens
        return float(took)


class _NoRequests:
    requests = ()
