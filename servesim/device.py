"""The virtual device: what one submission costs, and the capacity limits a batch must respect.

The defaults below are the simplest device: a prefill token costs 1 ms, a decode batch 1 ms
whatever its size, and every submission 0.25 ms on top. The other knobs (per-sequence decode
cost, a cap on active sequences, a KV page budget) are there for the later parts of chapter 31;
at their defaults they change nothing. The two context costs let a profile calibrated on a real
device (``run_gpu.py --calibrate``) charge for attention over the KV cache
(``rules.StepTerms``); they are left out of ``to_json`` while they are zero, so run files on the
lab's devices do not mention them, and recorded whenever they are not. The swap knobs (section
31.6) work the same way: a host pool of ``hostPages`` pages that a policy may swap running
sequences out to, and the transfer charged in the step that moves the pages (``swapMsPerPage``
per page each way, ``swapSyncMs`` per sequence moved); all zero, the device cannot swap and says
nothing of it. ``prefixCaching`` (the prefix cache, left out while false) keeps the KV pages as
vLLM's prefix cache does (``prefixcache.py``): shared-prefix pages held once, hits that skip
prefill work. The four ``stream*`` fields (output buffers, ``streaming.py``) give every request
an output buffer of ``streamBufferBytes`` (null: streaming off, and the four are left out of
``to_json``), each generated token an event of ``streamEventBytes`` in it, the level
``streamLowMarkBytes`` at or below which a paused stream resumes, and ``streamPauseDeadlineMs``
after which a paused stream is cancelled (null: never).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields

from . import rules
from .batch import Batch
from .fields import unknown_field_message


@dataclass(frozen=True)
class DeviceProfile:
    prefill_ms_per_token: float = 1.0
    decode_batch_ms: float = 1.0
    decode_ms_per_seq: float = 0.0
    overhead_ms: float = 0.25
    max_active: int | None = None  # K: sequences holding KV at once (None: no cap)
    kv_pages: int | None = None  # M: KV pages in the pool (None: no budget)
    page_tokens: int = 16
    prefill_ms_per_context_token: float = 0.0  # per attention pair of a prefill chunk (31.4)
    decode_ms_per_context_token: float = 0.0  # per cached position a decoded sequence reads
    swap_ms_per_page: float = 0.0  # moving one KV page between device and host, either way
    swap_sync_ms: float = 0.0  # per sequence swapped out or in (the chapter's C_s is two of them)
    host_pages: int = 0  # pages of the host pool swapped-out sequences wait in (0: no swap)
    prefix_caching: bool = False  # shared-prefix pages, vLLM's way (prefixcache.py)
    stream_buffer_bytes: int | None = None  # output buffers: bytes per request (None: off)
    stream_event_bytes: int = 256  # what one generated token's event takes in the buffer
    stream_low_mark_bytes: int = 0  # a paused stream resumes at or below this level
    stream_pause_deadline_ms: float | None = None  # a stream paused this long is cancelled

    def work_ms(self, batch: Batch, context: Mapping[str, int]) -> float:
        """Device time of a batch without the submission overhead (see ``rules.step_work_ms``)."""
        return rules.step_work_ms(self, batch, context)

    def duration_ms(self, batch: Batch, context: Mapping[str, int]) -> float:
        return rules.step_duration_ms(self, batch, context)

    pages_for = rules.pages_for  # (tokens) -> pages; a method without a call in between

    def to_json(self) -> dict:
        streams = self.stream_buffer_bytes is not None
        return {
            _camel(k): v
            for k, v in asdict(self).items()
            if not (k in _OMITTED_WHEN_ZERO and v == 0) and (streams or k not in _STREAM_FIELDS)
        }

    @classmethod
    def from_json(cls, doc: Mapping, source: str = "device profile") -> DeviceProfile:
        names = {_camel(f.name): f.name for f in fields(cls)}
        if unknown := unknown_field_message(doc, names):
            raise ValueError(f"{source}: {unknown}")
        profile = cls(**{names[k]: v for k, v in doc.items()})
        profile.check(source)
        return profile

    @classmethod
    def from_file(cls, doc: Mapping, source: str = "device profile") -> DeviceProfile:
        """A profile file: the profile itself, or ``{"device": PROFILE}`` with a
        ``description`` and (calibrated profiles, ``run_gpu.py --calibrate``) a
        ``calibration``; any other field is refused like a profile's own."""
        if "device" not in doc:
            return cls.from_json(doc, source)
        if unknown := unknown_field_message(doc, PROFILE_FILE_FIELDS):
            raise ValueError(f"{source}: {unknown}")
        if not isinstance(doc["device"], Mapping):
            raise ValueError(f"{source}: field 'device' must be a JSON object")
        return cls.from_json(doc["device"], source)

    def check(self, source: str = "device profile") -> None:
        for name in (
            "prefill_ms_per_token",
            "decode_batch_ms",
            "decode_ms_per_seq",
            "overhead_ms",
            *_COSTS_OMITTED_WHEN_ZERO,
        ):
            value = getattr(self, name)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not ok or not math.isfinite(value) or value < 0:
                raise ValueError(f"{source}: {_camel(name)} must be a finite number >= 0")
        for name in ("max_active", "kv_pages"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"{source}: {_camel(name)} must be null or an integer >= 1")
        if not isinstance(self.page_tokens, int) or self.page_tokens < 1:
            raise ValueError(f"{source}: pageTokens must be an integer >= 1")
        host = self.host_pages
        if isinstance(host, bool) or not isinstance(host, int) or host < 0:
            raise ValueError(f"{source}: hostPages must be an integer >= 0")
        if not isinstance(self.prefix_caching, bool):
            raise ValueError(f"{source}: prefixCaching must be true or false")
        if self.prefix_caching and host:
            raise ValueError(f"{source}: prefixCaching and a host pool cannot be combined")
        if self.stream_buffer_bytes is not None:
            self._check_streams(source)

    def _check_streams(self, source: str) -> None:
        """The output buffer's settings: whole bytes, an event that fits, a low mark
        at which the buffer can take another event (or a resumed stream would pause at once)."""
        size, event, low = (
            self.stream_buffer_bytes,
            self.stream_event_bytes,
            self.stream_low_mark_bytes,
        )
        for name, value, least in (("Buffer", size, 1), ("Event", event, 1), ("LowMark", low, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{source}: stream{name}Bytes must be an integer >= {least}")
        if event > size:
            raise ValueError(f"{source}: streamEventBytes ({event}) exceeds streamBufferBytes")
        if low > size - event:
            raise ValueError(
                f"{source}: streamLowMarkBytes ({low}) must leave room for one event "
                f"(at most streamBufferBytes - streamEventBytes = {size - event})"
            )
        deadline = self.stream_pause_deadline_ms
        if deadline is not None and not (
            isinstance(deadline, (int, float))
            and not isinstance(deadline, bool)
            and math.isfinite(deadline)
            and deadline > 0
        ):
            raise ValueError(f"{source}: streamPauseDeadlineMs must be null or a number > 0")

    @property
    def streams(self) -> bool:
        """Whether requests stream their output through a bounded buffer."""
        return self.stream_buffer_bytes is not None

    @property
    def swaps(self) -> bool:
        """Whether sequences may be swapped out to a host pool (run files then record swaps)."""
        return self.host_pages > 0


PROFILE_FILE_FIELDS = ("description", "device", "calibration")
_COSTS_OMITTED_WHEN_ZERO = (
    "prefill_ms_per_context_token",
    "decode_ms_per_context_token",
    "swap_ms_per_page",
    "swap_sync_ms",
)
_OMITTED_WHEN_ZERO = (*_COSTS_OMITTED_WHEN_ZERO, "host_pages", "prefix_caching")
_STREAM_FIELDS = (
    "stream_buffer_bytes",
    "stream_event_bytes",
    "stream_low_mark_bytes",
    "stream_pause_deadline_ms",
)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
