"""Streamed output on a device with ``streamBufferBytes`` (unit 09), replayed from the run file.

The replay keeps its own level of every request's output buffer: each token the events give a
request enters it at that event's end, and the client drains it at the trace's
``readBytesPerS`` (``servesim.streaming``'s closed forms, the same arithmetic as the engine's).
From those levels alone it knows when each stream pauses (the end of the step that left no room
for another event), when it resumes (the first decision point at or after the time it drains to
the low mark) and when a pause deadline cancels it. Decision points are the step ends and, where
the device idles, the resume and stall times themselves (the engine's clock stops there).

Named reasons: a batch that holds a paused stream is ``decode while paused``; a pause the
run does not list is ``pause not recorded``; a listed pause that ends before the buffer is down
to the low mark is ``resumed above low mark``, any other disagreement ``pause record``; a stream
still paused at its deadline and not reported cancelled ("stalled") there is ``stalled stream
not cancelled``; a completed request's ``ackMs`` other than the time its client read the last
event is ``ack time``; a request that did not complete but reports an ``ackMs`` is ``stream
called complete with unread events``; ``bufferPeakBytes`` and ``cancelReason`` are checked too.

``StreamChecks`` is mixed into the replay's walker (``replay``), which holds ``found``,
``reqs``, ``reported``, ``profile`` and the cancel path (``_terminate``).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

from servesim import streaming

from .problems import EPS_MS, ProblemKind, close_ms, fmt_ms

BAD = ProblemKind.INVALID_SCHEDULE


@dataclass
class _Stream:
    rate: float | None  # bytes/s (None: the client reads at once)
    level: float = 0.0
    last_ms: float = 0.0
    events: int = 0
    peak: float = 0.0
    resume_at: float = math.inf
    stall_at: float = math.inf
    pauses: list = field(default_factory=list)  # [start, end or None]
    drains: list = field(default_factory=list)  # per pause: (level at its start, resume_at)
    stalled: bool = False

    @property
    def paused(self) -> bool:
        return bool(self.pauses) and self.pauses[-1][1] is None and not self.stalled


class StreamChecks:
    streams = None  # id -> _Stream (None: the device does not stream)

    def _stream_init(self, trace, requests) -> None:
        if getattr(self.profile, "stream_buffer_bytes", None) is None:
            return
        self.streams = {r.id: _Stream(getattr(r, "read_bytes_per_s", None)) for r in trace.requests}
        self.stream_records = {
            q["id"]: q for q in requests or () if isinstance(q, dict) and "id" in q
        }
        self.paused_streams: dict[str, _Stream] = {}
        self.fresh: list[tuple[str, _Stream]] = []  # buffers the last step's tokens entered
        self.step_clock = 0.0  # the last step's end as the engine clocked it

    def _stream_changes(self, after: float, until: float) -> list[float]:
        """The times in ``(after, until]`` at which a paused stream resumes or stalls, in
        order: while the device idles, each is a decision point of the engine."""
        if self.streams is None:
            return []
        whens = {min(s.resume_at, s.stall_at) for s in self.paused_streams.values()}
        return sorted(when for when in whens if after < when < until)

    def _stream_members(self, event: dict, where) -> None:
        """No member of the batch may be a paused stream."""
        if self.streams is None:
            return
        for rid in (*event["decode"], *(c["id"] for c in event["prefill"])):
            s = self.streams[rid]
            if s.paused and not self.reqs[rid].gone:
                self.found.add(
                    BAD,
                    "decode while paused",
                    f"{where}: '{rid}' is paused since {fmt_ms(s.pauses[-1][0])} (its output "
                    f"buffer holds {self._level(s, event['startMs']):.0f} of "
                    f"{self.profile.stream_buffer_bytes} bytes) and may not run before it "
                    f"drains to the low mark at {fmt_ms(s.resume_at)}",
                    event["startMs"],
                )

    def _stream_tokens(self, event: dict, end: float) -> None:
        """The tokens of ``event`` enter their buffers at its end (as the engine clocked it,
        when the run's ``endMs`` agrees with the rules)."""
        if self.streams is None:
            return
        clock = event["endMs"] if close_ms(event["endMs"], end) else end
        self.step_clock, self.fresh = clock, []
        for rid in dict.fromkeys((*event["decode"], *(c["id"] for c in event["prefill"]))):
            s, made = self.streams[rid], len(self.reqs[rid].times)
            if s.events < made:
                s.events = made
                if s.rate is not None:
                    s.level = streaming.level_at(s.level, s.last_ms, s.rate, clock)
                    s.level += self.profile.stream_event_bytes
                    s.last_ms, s.peak = clock, max(s.peak, s.level)
                    self.fresh.append((rid, s))

    def update_streams(self, clock: float) -> None:
        """The output-buffer rule at a decision point: paused streams resume or stall (while
        idling, each at its own time in the idle window), then buffers the last step filled
        pause."""
        if self.idle_window is not None:
            after = self.idle_window[0]
            for rid, s in list(self.paused_streams.items()):
                when = min(s.resume_at, s.stall_at)
                if self.reqs[rid].gone:
                    del self.paused_streams[rid]
                elif after < when <= clock:
                    self._stream_decide(rid, s, when)
            return
        clock, device = self.step_clock, self.profile
        for rid, s in list(self.paused_streams.items()):
            if self.reqs[rid].gone:
                del self.paused_streams[rid]
            elif min(s.resume_at, s.stall_at) <= clock:
                self._stream_decide(rid, s, clock)
        for rid, s in self.fresh:
            if not self.reqs[rid].gone and not s.paused and streaming.is_full(s.level, device):
                s.resume_at = streaming.resume_ms(
                    s.level, clock, s.rate, device.stream_low_mark_bytes
                )
                deadline = device.stream_pause_deadline_ms
                s.stall_at = math.inf if deadline is None else clock + deadline
                s.pauses.append([clock, None])
                s.drains.append((s.level, s.resume_at))
                self.paused_streams[rid] = s
        self.fresh = []

    def _stream_decide(self, rid: str, s: _Stream, clock: float) -> None:
        """A paused stream at a decision point: it resumes, or its deadline cancels it."""
        if rid in self.client_left:
            return  # left by its client's cancel (that rule names a run that disagrees)
        if clock >= s.resume_at:
            s.pauses[-1][1] = clock
            del self.paused_streams[rid]
            return
        s.stalled = True
        del self.paused_streams[rid]
        status, at = self.reported[rid]
        reason = self.stream_records.get(rid, {}).get("cancelReason")
        if status != "cancelled" or at is None or not close_ms(at, clock) or reason != "stalled":
            self.found.add(
                BAD,
                "stalled stream not cancelled",
                f"'{rid}' has been paused since {fmt_ms(s.pauses[-1][0])}, past its pause "
                f"deadline at {fmt_ms(s.stall_at)}, with its buffer above the low mark: it must "
                f'be reported cancelled ("stalled") at {fmt_ms(clock)}',
                clock,
            )
            return
        self._terminate(rid)

    def _stream_idles(self) -> bool:
        """Whether a stream is paused now: the device may then idle (a policy that has nothing
        else it can run waits for it; the engine stops its clock at every resume and stall)."""
        if self.streams is None:
            return False
        return any(not self.reqs[rid].gone for rid in self.paused_streams)

    def _level(self, s: _Stream, now: float) -> float:
        if s.rate is None:
            return 0.0
        return streaming.level_at(s.level, s.last_ms, s.rate, now)

    def _check_streams(self) -> None:
        """After the last event: each request's record against the replay's stream."""
        if self.streams is None:
            return
        for rid, s in self.streams.items():
            record = self.stream_records.get(rid, {})
            self._check_pauses(rid, s, record.get("pausedMs") or [])
            self._check_ack(rid, s, record)
            peak = record.get("bufferPeakBytes")
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

    def _check_pauses(self, rid: str, s: _Stream, listed: list) -> None:
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
                held = streaming.level_at(level, start, s.rate, match[1])
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

    def _check_ack(self, rid: str, s: _Stream, record: dict) -> None:
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
        rate = s.rate
        ack = times[-1] if rate is None else streaming.ack_ms(s.level, s.last_ms, rate)
        if not _number(said) or not close_ms(said, ack):
            self.found.add(
                BAD,
                "ack time",
                f"'{rid}' reports ackMs {said!r}; its client reads its last event at {fmt_ms(ack)}",
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
