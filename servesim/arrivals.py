"""Where requests come from: an open-loop trace, or C closed-loop users with a think time.

Open loop: the arrival times are fixed in advance by the trace. Closed loop: each of ``users``
users sends a request, waits for it to leave the system (completed, rejected or cancelled),
thinks for ``think_ms``, and sends the next, until ``requests`` requests have been sent. So
arrivals depend on completions, which is what hides congestion (coordinated omission).
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass

from .sequence import Sequence
from .trace import Request, Trace

THINK_KINDS = ("fixed", "exponential")


@dataclass(frozen=True)
class ClosedLoop:
    """C users (``users``) with think time Z (``think_ms``, fixed or exponential with that mean),
    ``requests`` requests in all, sizes drawn uniformly (seeded) from ``sizes``' requests.

    Each user's first request arrives after one think time (at 0 ms for a fixed Z of 0); its
    next one a think time after the previous one completed (last token), was rejected (its
    arrival) or was cancelled (the step end). Request ``k`` (0-based, in creation order) of the
    run is named ``c{k}`` with zero padding; the sizes, deadline, tenant and declared maximum
    are copied from the drawn request (and its cancel time, prefix and read rate).
    """

    users: int
    think_ms: float
    requests: int
    sizes: Trace
    seed: int = 0
    think: str = "fixed"

    def __post_init__(self):
        if self.users < 1 or self.requests < 1:
            raise ValueError("closed loop: users and requests must be >= 1")
        if self.think_ms < 0 or self.think not in THINK_KINDS:
            raise ValueError(f"closed loop: think time must be >= 0 and one of {THINK_KINDS}")


class Arrivals:
    """Requests not yet seen by the engine, by (arrival time, order).

    A live source (``grader.serve``) extends it with three hooks, which a trace or a closed
    loop leaves as they are: ``idle`` (the device idles from ``clock`` to ``wake``: a live
    source waits that long in real time, less if a request comes), ``late_cancels`` (client
    cancels learnt after admission) and ``realised`` (the requests as a trace).
    """

    def __init__(self, trace: Trace | None = None, closed: ClosedLoop | None = None):
        self.sequences: list[Sequence] = []  # every request created so far, in order
        self.ids: set[str] = set()  # their ids: what a batch may name at all
        self._heap: list[tuple[float, int, Sequence]] = []
        # admitted requests whose ``cancel_ms`` was set after admission (a live source only);
        # ``EngineState.cancel_clients`` takes them at the next decision point
        self.late_cancels: list[Sequence] = []
        self._closed = closed
        self._user: dict[str, int] = {}
        if closed is None:
            for order, request in enumerate(trace.requests):
                self._push(Sequence.of(request, order))
        else:
            self._rng = random.Random(closed.seed)
            self._width = len(str(closed.requests - 1))
            for user in range(min(closed.users, closed.requests)):
                self._send(user, self._think())

    def __bool__(self) -> bool:
        return bool(self._heap)

    def next_ms(self) -> float:
        return self._heap[0][0]

    def pop_due(self, clock: float) -> Sequence | None:
        if self._heap and self._heap[0][0] <= clock:
            return heapq.heappop(self._heap)[2]
        return None

    def idle(self, clock: float, wake: float) -> float:
        """Where the clock goes when the device idles at ``clock`` until ``wake`` (the next
        known arrival, resume, stall or cancel; ``clock`` itself when none is known)."""
        return wake

    def realised(self, source: Trace | None, closed: ClosedLoop | None) -> Trace:
        """The requests this run replayed, as a trace (``realised_trace``)."""
        return realised_trace(source, closed, self.sequences)

    def left(self, seq: Sequence, at_ms: float) -> None:
        """``seq`` left the system at ``at_ms``: its user (closed loop) thinks, then sends."""
        closed = self._closed
        if closed is None or len(self.sequences) >= closed.requests:
            return
        self._send(self._user[seq.id], at_ms + self._think())

    def _think(self) -> float:
        closed = self._closed
        if closed.think == "exponential" and closed.think_ms > 0:
            return self._rng.expovariate(1.0 / closed.think_ms)
        return float(closed.think_ms)

    def _send(self, user: int, at_ms: float) -> None:
        drawn: Request = self._rng.choice(self._closed.sizes.requests)
        rid = f"c{len(self.sequences):0{self._width}d}"
        self._user[rid] = user
        self._push(Sequence.of(drawn._replace(id=rid, arrival_ms=at_ms), len(self.sequences)))

    def _push(self, seq: Sequence) -> None:
        self.sequences.append(seq)
        self.ids.add(seq.id)
        heapq.heappush(self._heap, (seq.arrival_ms, seq.order, seq))


def realised_trace(source: Trace | None, closed: ClosedLoop | None, seqs) -> Trace:
    """The requests a run actually replayed, as a trace (the open-loop trace itself)."""
    if closed is None:
        return source
    name = f"{closed.sizes.name}-closed-{closed.users}x{closed.think_ms:g}ms"
    description = (
        f"closed loop: {closed.users} users, think {closed.think_ms:g} ms ({closed.think}), "
        f"{closed.requests} requests sized from '{closed.sizes.name}', seed {closed.seed}"
    )
    return trace_of(name, description, seqs)


def trace_of(name: str, description: str, seqs) -> Trace:
    """The trace whose replay makes ``seqs`` (each request's fields as the engine saw them)."""
    requests = tuple(
        Request(
            s.id,
            s.arrival_ms,
            s.input_tokens,
            s.output_tokens,
            None if s.max_output_tokens == s.output_tokens else s.max_output_tokens,
            s.deadline_ms,
            s.tenant,
            s.cancel_ms,
            s.prefix,
            s.read_bytes_per_s,
            s.reads_ms,
        )
        for s in seqs
    )
    raw = {
        "name": name,
        "description": description,
        "requests": [_request_json(r) for r in requests],
    }
    return Trace(name, description, requests, raw)


def _request_json(r: Request) -> dict:
    doc = {
        "id": r.id,
        "arrivalMs": r.arrival_ms,
        "inputTokens": r.input_tokens,
        "outputTokens": r.output_tokens,
    }
    if r.max_output_tokens is not None:
        doc["maxOutputTokens"] = r.max_output_tokens
    if r.deadline_ms is not None:
        doc["deadlineMs"] = r.deadline_ms
    if r.tenant:
        doc["tenant"] = r.tenant
    if r.cancel_ms is not None:
        doc["cancelMs"] = r.cancel_ms
    if r.prefix:
        doc["prefix"] = [{"id": sid, "tokens": tokens} for sid, tokens in r.prefix]
    if r.read_bytes_per_s is not None:
        doc["readBytesPerS"] = r.read_bytes_per_s
    if r.reads_ms is not None:
        doc["readsMs"] = list(r.reads_ms)
    return doc
