"""Streaming output (exercise 31.10): each request's output buffer, filled by the
tokens it generates and drained by its client, and the states a full buffer leads to.

On a device with ``streamBufferBytes`` (``device.py``) every generated token is an event of
``streamEventBytes`` bytes that enters its request's buffer at the end of the step that made
it. The client reads continuously at the trace's ``readBytesPerS`` (a fluid model, in closed
form: between events the level falls linearly to 0), or at the times its ``readsMs`` log lists
(a served stream's real reads, ``readlog.py``); a request with neither is read at once and its
buffer stays empty. The rules, applied at every decision point of the engine after its
arrivals, deadlines and client cancels:

- A live request whose buffer cannot take another event (level + event > capacity) is
  PAUSED. It keeps its KV pages and its place; a batch that decodes or prefills it breaks the
  device's contract. Such a level can only follow a new event, so a pause starts at the end of
  the step that filled the buffer.
- A paused stream resumes at the first decision point at or after the time its buffer drains
  to the low mark (``resume_ms``: closed form, so no rounding of levels decides it).
- A stream still paused at a decision point ``streamPauseDeadlineMs`` or more after its pause
  began is cancelled there ("stalled"): terminal, its pages released once, like a client
  cancel (``EngineState.terminate``).
- When every live request is paused, the clock jumps to the next resume or stall time (or
  arrival), and a policy's ``Wait`` ends there too: those times are decision points.

A request's generation ends with its last token; its stream is complete when the client has
read the last event (``ack_ms``). A cancelled stream is never complete, whatever it had read.
The grader's replay drives these buffers itself (``grader/verify/replay.py``) and holds a run's
records against them (``grader/verify/replay_streams.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType

from . import readlog
from .contract import GUARD
from .sequence import Sequence, Status

STALLED = "stalled"  # Sequence.cancel_reason of a stream cancelled at its pause deadline
_SET = object.__setattr__  # the engine's writes on the hot path, past the refusals below


def level_at(level: float, last_ms: float, rate: float, now_ms: float) -> float:
    """Bytes in a buffer at ``now_ms`` that held ``level`` right after its last event at
    ``last_ms``, read at ``rate`` bytes/s since."""
    return max(0.0, level - rate * (now_ms - last_ms) / 1000.0)


def resume_ms(level: float, last_ms: float, rate: float, low: int) -> float:
    """When a buffer holding ``level`` bytes at ``last_ms`` (no event since) drains to ``low``."""
    return last_ms + (level - low) * 1000.0 / rate


def ack_ms(level: float, last_ms: float, rate: float) -> float:
    """When the client has read every event of a buffer that held ``level`` at ``last_ms``."""
    return last_ms + level * 1000.0 / rate


def is_full(level: float, device) -> bool:
    """Whether a buffer holding ``level`` bytes cannot take another event."""
    return level + device.stream_event_bytes > device.stream_buffer_bytes


@dataclass(slots=True)
class Buffer:
    """One request's output buffer, for a client that reads at ``rate`` bytes/s, or (``log``)
    at the times its ``seq.reads_ms`` lists."""

    seq: Sequence
    rate: float | None
    log: readlog.Logged | None = None  # a logged client (rate None)
    level: float = 0.0  # right after the last event (a fluid reader's)
    last_ms: float = 0.0
    events: int = 0
    peak: float = 0.0
    resume_at: float = math.inf  # while paused: when it drains to the low mark
    stall_at: float = math.inf  # while paused: when its pause deadline passes
    pauses: list = field(default_factory=list)  # [start, end or None] per pause
    # (level, resume_at, events) at the start of each pause: no event enters while it lasts
    drains: list = field(default_factory=list)

    def __setattr__(self, name: str, value) -> None:
        """Refused while a policy runs (``contract.Guard``): policies read buffers."""
        if GUARD.who is not None:
            GUARD.refuse(f"{name} of the output buffer of request {self.seq.id!r}")
        _SET(self, name, value)

    def held(self, now_ms: float) -> float:
        """Bytes in the buffer at ``now_ms`` (at or after its last event)."""
        if self.log is not None:
            return self.log.held(self.events, now_ms)
        return level_at(self.level, self.last_ms, self.rate, now_ms)

    def drained_at(self, low: int) -> float:
        """When the buffer, taking no more events, is down to ``low`` bytes (inf: a logged
        client has not made that read yet)."""
        if self.log is not None:
            return self.log.drained_at(self.events, low)
        return resume_ms(self.level, self.last_ms, self.rate, low)

    def add(self, at_ms: float, size: int) -> None:
        if self.log is not None:  # a logged client's levels come from its log when asked
            _SET(self, "last_ms", at_ms)
            _SET(self, "events", self.events + 1)
            return
        level = level_at(self.level, self.last_ms, self.rate, at_ms) + size
        _SET(self, "level", level)
        _SET(self, "last_ms", at_ms)
        _SET(self, "events", self.events + 1)
        if level > self.peak:
            _SET(self, "peak", level)


class Streams:
    """Every output buffer of a run on a streaming device, kept by the engine. A policy reads
    them through its view (``view.paused``, ``view.buffer_bytes``): ``buffers`` and ``paused``
    are read-only mappings, so a policy that edits them is stopped as for ``view.live``."""

    def __init__(self, device):
        self.device = device
        self._buffers: dict[str, Buffer] = {}
        self._paused: dict[str, Buffer] = {}
        self.buffers = MappingProxyType(self._buffers)  # requests with a read rate, by id
        self.paused = MappingProxyType(self._paused)  # in the order they paused
        self._fresh: list[Buffer] = []  # buffers that took events at the last step end

    def __setattr__(self, name: str, value) -> None:
        """Refused while a policy runs (``contract.Guard``), like the buffers themselves."""
        if GUARD.who is not None:
            GUARD.refuse(f"{name} of the output buffers, view.streams")
        _SET(self, name, value)

    def admit(self, seq: Sequence) -> None:
        """A request admitted to the run: a buffer if its client reads at a finite rate or
        logs its reads."""
        if seq.read_bytes_per_s is not None or seq.reads_ms is not None:
            rate = seq.read_bytes_per_s
            log = None if rate is not None else readlog.Logged(seq, self.device.stream_event_bytes)
            self._buffers[seq.id] = Buffer(seq, rate, log)

    def after_step(self, batch, end_ms: float) -> None:
        """The tokens the step ending at ``end_ms`` generated enter their buffers."""
        size, buffers = self.device.stream_event_bytes, self._buffers
        for rid in (*batch.decode, *(chunk.id for chunk in batch.prefill)):
            buf = buffers.get(rid)
            if buf is not None and buf.events < len(buf.seq.token_times_ms):
                buf.add(end_ms, size)
                self._fresh.append(buf)

    def update(self, clock: float, state) -> None:
        """At a decision point: paused streams resume or stall, full buffers pause."""
        low = self.device.stream_low_mark_bytes
        for rid, buf in list(self._paused.items()):
            seq = buf.seq
            if buf.log is not None:  # reads learnt since (a live source): the drain may be known
                buf.resume_at = buf.drained_at(low)
            if seq.status is not None:  # left (a client cancel): its pause never ends
                del self._paused[rid]
                seq.paused = False
            elif clock >= buf.resume_at:
                del self._paused[rid]
                seq.paused = False
                buf.pauses[-1][1] = clock
            elif clock >= buf.stall_at:
                del self._paused[rid]
                seq.paused = False
                state.terminate(seq, Status.CANCELLED, clock, STALLED)
        device = self.device
        for buf in self._fresh:
            full = is_full(buf.held(buf.last_ms), device)
            if buf.seq.status is None and not buf.seq.paused and full:
                self._pause(buf, clock)
        self._fresh.clear()

    def _pause(self, buf: Buffer, clock: float) -> None:
        device = self.device
        buf.resume_at = buf.drained_at(device.stream_low_mark_bytes)
        deadline = device.stream_pause_deadline_ms
        buf.stall_at = math.inf if deadline is None else clock + deadline
        buf.pauses.append([clock, None])
        buf.drains.append((buf.held(clock), buf.resume_at, buf.events))
        buf.seq.paused = True
        self._paused[buf.seq.id] = buf

    def blocks(self, live) -> bool:
        """Whether every live request is paused: nothing can run until one resumes."""
        return len(self.paused) == len(live)

    def next_change(self) -> float:
        """The next time a paused stream resumes or stalls (inf when none is paused)."""
        return min((min(b.resume_at, b.stall_at) for b in self.paused.values()), default=math.inf)

    def occupancy(self, rid: str, now_ms: float) -> float:
        """Bytes in ``rid``'s buffer at ``now_ms`` (0 for a client that reads at once)."""
        buf = self.buffers.get(rid)
        return 0.0 if buf is None else buf.held(now_ms)

    def violation(self, batch, now_ms: float) -> str | None:
        """The sentence for a batch that decodes or prefills a paused stream (None: none)."""
        paused = self.paused
        if not paused:
            return None
        for rid in (*batch.decode, *(chunk.id for chunk in batch.prefill)):
            if rid in paused:
                buf, device = paused[rid], self.device
                held = buf.held(now_ms)
                return (
                    f"'{rid}' is paused: its output buffer holds {held:.0f} of "
                    f"{device.stream_buffer_bytes} bytes, no room for another "
                    f"{device.stream_event_bytes}-byte event, so it may not be decoded or "
                    f"prefilled until it drains to the low mark "
                    f"({device.stream_low_mark_bytes} bytes) at {buf.resume_at:.2f} ms"
                )
        return None

    def records(self, seqs) -> dict[str, dict]:
        """Per request id: ``ackMs``, ``pausedMs`` and ``bufferPeakBytes`` (the run file's)."""
        out = {}
        for seq in seqs:
            buf = self.buffers.get(seq.id)
            done = seq.status is Status.COMPLETED
            if buf is None:
                ack = seq.token_times_ms[-1] if done else None
                out[seq.id] = {"ackMs": ack, "pausedMs": [], "bufferPeakBytes": 0}
                continue
            if buf.log is not None:
                ack = buf.log.ack(buf.events) if done else None
                peak = buf.log.peak(seq.token_times_ms)
            else:
                ack = ack_ms(buf.level, buf.last_ms, buf.rate) if done else None
                peak = buf.peak
            out[seq.id] = {
                "ackMs": ack,
                "pausedMs": [list(p) for p in buf.pauses],
                "bufferPeakBytes": _number(peak),
            }
        return out


def _number(value: float) -> int | float:
    """A whole number of bytes as an int (the run file's spelling), else the float."""
    return int(value) if float(value).is_integer() else value
