"""The records of a streamed run checked against the replay's own streams, after its last
event (``replay_stream.StreamChecks`` mixes this in): each request's ``pausedMs``, ``ackMs``,
``bufferPeakBytes`` and ``cancelReason``, with the reasons the replay module names."""

from __future__ import annotations

import bisect

from servesim import streaming

from .problems import EPS_MS, ProblemKind, close_ms, fmt_ms

BAD = ProblemKind.INVALID_SCHEDULE


class StreamRecords:
    def _check_streams(self) -> None:
        """After the last event: each request's record against the replay's stream."""
        if self.streams is None:
            return
        for rid, s in self.streams.items():
            record = self.stream_records.get(rid, {})
            self._check_pauses(rid, s, record.get("pausedMs") or [])
            self._check_ack(rid, s, record)
            peak = record.get("bufferPeakBytes")
            if s.log is not None:
                s.peak = s.log.peak(self.reqs[rid].times)
            if peak is None or abs(peak - s.peak) > 1e-6 * max(1.0, s.peak):
                self.found.add(
                    BAD,
                    "buffer peak",
                    f"'{rid}' reports bufferPeakBytes {peak!r}; its buffer peaks at "
                    f"{s.peak:.0f} bytes",
                )
            said = record.get("cancelReason")
            if self.reported[rid][0] == "cancelled" and (said == "stalled") != s.stalled:
                self.found.add(
                    BAD,
                    "cancel reason",
                    f"'{rid}' reports cancelReason {said!r}, but its stream "
                    f"{'stalls' if s.stalled else 'does not stall'}",
                )

    def _check_pauses(self, rid: str, s, listed: list) -> None:
        starts = sorted((p[0], n) for n, p in enumerate(listed) if _pair(p))
        for (start, end), (level, resume_at) in zip(s.pauses, s.drains, strict=True):
            match = _listed_at(listed, starts, start)
            if match is None:
                self.found.add(
                    BAD,
                    "pause not recorded",
                    f"'{rid}' pauses at {fmt_ms(start)} (its output buffer cannot take another "
                    f"event), but its pausedMs does not list that pause",
                    start,
                )
            elif _number(match[1]) and match[1] < resume_at and not close_ms(match[1], resume_at):
                held = (
                    s.log.held(level, match[1])  # level: the events then
                    if s.log is not None
                    else streaming.level_at(level, start, s.rate, match[1])
                )
                self.found.add(
                    BAD,
                    "resumed above low mark",
                    f"'{rid}' is listed as resuming at {fmt_ms(match[1])}, when its buffer "
                    f"still holds {held:.0f} bytes, above the low mark "
                    f"({self.profile.stream_low_mark_bytes} bytes), which it reaches at "
                    f"{fmt_ms(resume_at)}",
                    match[1],
                )
            elif not _same_end(match[1], end):
                self.found.add(
                    BAD,
                    "pause record",
                    f"'{rid}' pauses from {fmt_ms(start)} to "
                    f"{'the end' if end is None else fmt_ms(end)}; pausedMs says {match!r}",
                    start,
                )
        if len(listed) != len(s.pauses):  # the message never quotes the listed count
            self.found.add(
                BAD,
                "pause record",
                f"'{rid}' pauses {len(s.pauses)} times, but its pausedMs lists a different "
                f"number of pauses",
            )

    def _check_ack(self, rid: str, s, record: dict) -> None:
        said = record.get("ackMs")
        completed = self.reported[rid][0] == "completed" and not s.stalled
        if not completed:
            if said is not None:
                self.found.add(
                    BAD,
                    "stream called complete with unread events",
                    f"'{rid}' did not complete, so its stream is not complete: its ackMs must be "
                    f"null, not {said!r}",
                )
            return
        times = self.reqs[rid].times
        if not times:
            return  # the token count check names this one
        if s.log is not None:  # None: its client had not read the last event
            ack = s.log.ack(len(times))
        else:
            ack = times[-1] if s.rate is None else streaming.ack_ms(s.level, s.last_ms, s.rate)
        agrees = said is None if ack is None else _number(said) and close_ms(said, ack)
        if not agrees:
            at = "never" if ack is None else f"at {fmt_ms(ack)}"
            self.found.add(
                BAD,
                "ack time",
                f"'{rid}' reports ackMs {said!r}; its client reads its last event {at}",
            )


def _listed_at(listed: list, starts: list, start: float):
    """The listed pause that starts at ``start`` (the earliest-listed of the nearest start), by
    bisection in ``starts`` (each valid pair's start and position, sorted): a long list costs
    no scan per pause."""
    at = bisect.bisect_left(starts, (start - EPS_MS, -1))
    if at < len(starts) and close_ms(starts[at][0], start):
        return listed[starts[at][1]]
    return None


def _pair(item) -> bool:
    return isinstance(item, (list, tuple)) and len(item) == 2 and _number(item[0])


def _same_end(listed, end: float | None) -> bool:
    """A listed pause end against the replay's (None: the pause never ends)."""
    if listed is None or end is None:
        return listed is None and end is None
    return _number(listed) and close_ms(listed, end)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
