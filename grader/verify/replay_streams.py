"""A streamed run's records (``pausedMs``, ``ackMs``, ``bufferPeakBytes``, ``cancelReason``)
held against the output buffers of ``servesim.streaming`` that the replay's engine kept.

Named reasons: a pause the run does not list is ``pause not recorded``; a listed pause that
ends before the buffer is down to the low mark is ``resumed above low mark``, any other
disagreement ``pause record``; a completed request's ``ackMs`` other than the time its client
read the last event is ``ack time``; a request that did not complete but reports an ``ackMs``
is ``stream called complete with unread events``; then ``buffer peak`` and ``cancel reason``.
"""

from __future__ import annotations

import bisect

from servesim.sequence import Status
from servesim.streaming import STALLED, level_at

from .problems import EPS_MS, close_ms, fmt_ms
from .replay_claims import Refuted


def check(seq, streams, record: dict, status: str, device) -> None:
    """One request's stream record (``pausedMs``, ``ackMs``, ``bufferPeakBytes``,
    ``cancelReason``) against the one the engine's output buffers write for it."""
    rid, buf = seq.id, streams.buffers.get(seq.id)
    ours = streams.records((seq,))[rid]
    drains = buf.drains if buf is not None else []
    _pauses(rid, ours["pausedMs"], drains, record.get("pausedMs") or [], buf, device)
    stalled = seq.cancel_reason == STALLED
    said = record.get("ackMs")
    if status != "completed" or stalled:
        if said is not None:
            raise Refuted(
                "stream called complete with unread events",
                f"'{rid}' did not complete, so its stream is not complete: its ackMs must be "
                f"null, not {said!r}",
            )
    elif seq.status is Status.COMPLETED and not close_ms(said, ack := ours["ackMs"]):
        at = "never" if ack is None else f"at {fmt_ms(ack)}"
        raise Refuted(
            "ack time", f"'{rid}' reports ackMs {said!r}; its client reads its last event {at}"
        )
    peak, real = record.get("bufferPeakBytes"), ours["bufferPeakBytes"]
    if peak is None or abs(peak - real) > 1e-6 * max(1.0, real):
        raise Refuted(
            "buffer peak",
            f"'{rid}' reports bufferPeakBytes {peak!r}; its buffer peaks at {real:.0f} bytes",
        )
    said = record.get("cancelReason")
    if status == "cancelled" and (said == STALLED) != stalled:
        raise Refuted(
            "cancel reason",
            f"'{rid}' reports cancelReason {said!r}, but its stream "
            f"{'stalls' if stalled else 'does not stall'}",
        )


def _pauses(rid: str, pauses, drains, listed: list, buf, device) -> None:
    """Each pause of the rules (``pauses``, with its buffer's ``drains``) listed at its start
    (found by bisection in the valid pairs' starts: a long list costs no scan per pause), with
    its end; then as many listed as there are."""
    pairs = (n for n, p in enumerate(listed) if isinstance(p, (list, tuple)) and len(p) == 2)
    starts = sorted((listed[n][0], n) for n in pairs if _number(listed[n][0]))
    for (start, end), (level, resume_at, events) in zip(pauses, drains, strict=True):
        at = bisect.bisect_left(starts, (start - EPS_MS, -1))  # the earliest-listed nearest
        if at == len(starts) or not close_ms(starts[at][0], start):
            raise Refuted(
                "pause not recorded",
                f"'{rid}' pauses at {fmt_ms(start)} (its output buffer cannot take another "
                "event), but its pausedMs does not list that pause",
                start,
            )
        match = listed[starts[at][1]]
        if _number(match[1]) and match[1] < resume_at and not close_ms(match[1], resume_at):
            if buf.log is not None:
                held = buf.log.held(events, match[1])
            else:
                held = level_at(level, start, buf.rate, match[1])
            raise Refuted(
                "resumed above low mark",
                f"'{rid}' is listed as resuming at {fmt_ms(match[1])}, when its buffer still "
                f"holds {held:.0f} bytes, above the low mark ({device.stream_low_mark_bytes} "
                f"bytes), which it reaches at {fmt_ms(resume_at)}",
                match[1],
            )
        if not close_ms(match[1], end):  # both None: the pause never ends
            raise Refuted(
                "pause record",
                f"'{rid}' pauses from {fmt_ms(start)} to "
                f"{'the end' if end is None else fmt_ms(end)}; pausedMs says {match!r}",
                start,
            )
    if len(listed) != len(pauses):  # the message never quotes the listed count
        raise Refuted(
            "pause record",
            f"'{rid}' pauses {len(pauses)} times, but its pausedMs lists a different number "
            "of pauses",
        )


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
