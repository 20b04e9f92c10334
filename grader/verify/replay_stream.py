"""Streamed output on a device with ``streamBufferBytes`` (unit 09), replayed from the run file.

The replay keeps its own level of every request's output buffer: each token the events give a
request enters it at that event's end, and the client drains it at the trace's
``readBytesPerS`` (``servesim.streaming``'s closed forms) or at the times its ``readsMs`` log
lists (``servesim.readlog``): the same arithmetic as the engine's.
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

import math
from dataclasses import dataclass, field

from servesim import readlog, streaming

from .problems import ProblemKind, close_ms, fmt_ms
from .stream_records import StreamRecords

BAD = ProblemKind.INVALID_SCHEDULE


@dataclass
class _Stream:
    rate: float | None  # bytes/s (None: the client reads at once, or logs its reads)
    log: readlog.Logged | None = None  # a client that logs its reads (``readsMs``)
    level: float = 0.0
    last_ms: float = 0.0
    events: int = 0
    peak: float = 0.0
    resume_at: float = math.inf
    stall_at: float = math.inf
    pauses: list = field(default_factory=list)  # [start, end or None]
    # per pause: (level at its start, or a logged stream's events then; resume_at)
    drains: list = field(default_factory=list)
    stalled: bool = False

    @property
    def paused(self) -> bool:
        return bool(self.pauses) and self.pauses[-1][1] is None and not self.stalled


class StreamChecks(StreamRecords):
    streams = None  # id -> _Stream (None: the device does not stream)

    def _stream_init(self, trace, requests) -> None:
        if getattr(self.profile, "stream_buffer_bytes", None) is None:
            return
        size = self.profile.stream_event_bytes
        self.streams = {
            r.id: _Stream(
                r.read_bytes_per_s, None if r.reads_ms is None else readlog.Logged(r, size)
            )
            for r in trace.requests
        }
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
                if s.log is not None:
                    s.last_ms = clock
                    self.fresh.append((rid, s))
                elif s.rate is not None:
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
            full = streaming.is_full(self._level(s, clock), device)
            if not self.reqs[rid].gone and not s.paused and full:
                low = device.stream_low_mark_bytes
                s.resume_at = (
                    s.log.drained_at(s.events, low)
                    if s.log is not None
                    else streaming.resume_ms(s.level, clock, s.rate, low)
                )
                deadline = device.stream_pause_deadline_ms
                s.stall_at = math.inf if deadline is None else clock + deadline
                s.pauses.append([clock, None])
                s.drains.append((s.events if s.log else s.level, s.resume_at))
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
        if s.log is not None:
            return s.log.held(s.events, now)
        if s.rate is None:
            return 0.0
        return streaming.level_at(s.level, s.last_ms, s.rate, now)
