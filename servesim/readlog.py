"""A client whose reads are logged instead of modelled: the trace's ``readsMs``.

A live client (``infralab serve``) does not read at a rate known in advance: its socket takes
each streamed event when the client has made room for it. Such a request's trace entry lists,
in order, the time after its arrival at which the client read each of its events
(``readsMs[k]``: event ``k``, the ``k``-th token's). Its output buffer then holds, at any time,
one event per token that entered it (at the end of the step that made it) less the events read
by then; read ``k`` counts from ``arrivalMs + readsMs[k]``.

The output-buffer rules (``streaming.py``) are unchanged: the buffer pauses its stream when it
cannot take another event, resumes at the first decision point at or after the read that
brings it down to the low mark, and stalls at its pause deadline. With a log, the time of that
read is known once the read is (``resume_at``: inf before). The engine and the grader's replay
both ask these functions, so they agree to the bit.
"""

from __future__ import annotations

import bisect
import math


def read_by(arrival_ms: float, reads, now_ms: float) -> int:
    """How many events the client had read by ``now_ms`` (``reads``: ``readsMs``, sorted)."""
    return bisect.bisect_right(reads, now_ms, key=lambda rel: arrival_ms + rel)


def level(arrival_ms: float, reads, events: int, size: int, now_ms: float) -> int:
    """Bytes in the buffer at ``now_ms`` after ``events`` events of ``size`` bytes entered it
    (never below 0: a read stamped a hair before its event's step end empties it at once)."""
    return size * max(0, events - read_by(arrival_ms, reads, now_ms))


def resume_at(arrival_ms: float, reads, events: int, size: int, low: int) -> float:
    """When a buffer that took ``events`` events (and takes no more: it is paused) is down to
    the low mark ``low``: the time of the read that makes it so (inf: not read yet)."""
    need = events - low // size  # reads after which at most ``low`` bytes are left
    if need <= 0:
        return -math.inf
    return arrival_ms + reads[need - 1] if len(reads) >= need else math.inf


def ack_at(arrival_ms: float, reads, events: int) -> float | None:
    """When the client read the last of ``events`` events (None: it has not)."""
    return arrival_ms + reads[events - 1] if events and len(reads) >= events else None


def peak(arrival_ms: float, reads, token_times, size: int) -> int:
    """The fullest the buffer was: right after each event entered it (at its token's time)."""
    return max(
        (level(arrival_ms, reads, k, size, t) for k, t in enumerate(token_times, start=1)),
        default=0,
    )


def valid(reads, output_tokens: int) -> str | None:
    """Why ``reads`` cannot be a trace's ``readsMs`` for ``output_tokens`` tokens (None: it can):
    a list of at most ``outputTokens`` finite numbers >= 0, in order."""
    if not isinstance(reads, list):
        return f"must be a list of times (ms after arrival), got {type(reads).__name__}"
    if len(reads) > output_tokens:
        return f"lists {len(reads)} reads, more than outputTokens ({output_tokens})"
    previous = 0.0
    for n, value in enumerate(reads):
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or value < previous:
            return (
                f"item {n} must be a finite number >= {previous:g} (reads in order), got {value!r}"
            )
        previous = value
    return None


class Logged:
    """A logged client, as the output-buffer rules ask about it (the engine's ``Buffer`` and the
    grader's replay): ``who`` is its request (a ``Sequence`` or a trace ``Request``: its
    ``arrival_ms`` and ``reads_ms``, read at each question, since a live source adds reads),
    ``size`` the bytes of one event."""

    __slots__ = ("size", "who")

    def __init__(self, who, size: int):
        self.who, self.size = who, size

    def held(self, events: int, now_ms: float) -> int:
        who = self.who
        return level(who.arrival_ms, who.reads_ms, events, self.size, now_ms)

    def drained_at(self, events: int, low: int) -> float:
        who = self.who
        return resume_at(who.arrival_ms, who.reads_ms, events, self.size, low)

    def ack(self, events: int) -> float | None:
        return ack_at(self.who.arrival_ms, self.who.reads_ms, events)

    def peak(self, token_times) -> int:
        return peak(self.who.arrival_ms, self.who.reads_ms, token_times, self.size)
