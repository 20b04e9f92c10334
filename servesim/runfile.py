"""The run file: one JSON document with the trace and one run per policy (see schemas/)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .device import DeviceProfile
from .engine import Timeline
from .faults import FAULTS
from .metrics import NO_METRICS, request_metrics, summarize
from .sequence import Status
from .trace import Trace

FORMAT_VERSION = 1


def build_run(
    policy: str,
    params: dict,
    device: DeviceProfile,
    timeline: Timeline,
    fault: str | None,
    *,
    extended: bool = False,
    limits: dict | None = None,
    events: bool = True,
) -> dict:
    """One entry of ``runs``: the raw timeline, metrics recomputed from it, and a summary.

    ``events=False`` (a run that will be written compact, ``servesim.compact``, which reads
    the timeline instead): ``"events"`` is None, to be filled by ``event_records`` should the
    run be written in full after all; the summary is the same. A fault switch always gets them.

    ``extended`` adds each request's status, its recomputes and its optional trace
    fields,
    each event's ``preempt`` list, the engine ``limits`` and the status counts of the summary;
    without it the entry is the plain one. On a device with a host pool every event also
    lists the sequences it swapped out and in (``swapOut``, ``swapIn``). An extended run on a
    streaming device gives each request its stream's record (``_stream_fields``).
    """
    requests = request_records(timeline, extended=extended)
    full = events or fault is not None
    records = event_records(timeline, extended=extended, swaps=device.swaps) if full else None
    run = {
        "policy": policy,
        "params": dict(params),
        "device": device.to_json(),
        "fault": fault,
        "requests": requests,
        "events": records,
    }
    if extended:
        run["limits"] = {"budget": None, "queueCap": None, **(limits or {})}
    if fault is not None:
        FAULTS[fault].apply(run)
    steps = None if records is not None else _step_figures(timeline)
    run["summary"] = summarize(run["requests"], run["events"], extended=extended, steps=steps)
    return run


def event_records(timeline: Timeline, *, extended: bool, swaps: bool) -> list[dict]:
    """The ``events`` of a run entry: with each step's preemptions when ``extended``,
    with its swaps when ``swaps`` (a device with a host pool)."""
    return [_event(event, extended, swaps) for event in timeline.events]


def _step_figures(timeline: Timeline) -> dict:
    """``metrics.step_figures`` of the events ``event_records`` would make, from the timeline."""
    events = timeline.events
    return {
        "submissions": len(events),
        "prefillSubmissions": sum(1 for e in events if e.batch.prefill),
        "decodeSubmissions": sum(1 for e in events if e.batch.decode),
        "busyMs": sum(e.end_ms - e.start_ms for e in events),
    }


def request_records(timeline: Timeline, *, extended: bool = False) -> list[dict]:
    """The ``requests`` of a run entry alone (what measurement reads), in trace order."""
    streams = timeline.streams if extended else None
    if streams is None:
        return [_request(seq, extended) for seq in timeline.sequences]
    return [_request(seq, extended) | _stream_fields(seq, streams) for seq in timeline.sequences]


def _stream_fields(seq, streams: dict) -> dict:
    """A request's output stream: ``ackMs``, when its client had read the last event
    (null unless it completed), ``pausedMs`` (``[start, end]`` per pause, end null if it never
    resumed), ``bufferPeakBytes``, and for a cancelled request ``cancelReason`` ("deadline",
    "client" or "stalled")."""
    entry = dict(streams[seq.id])
    if seq.status is Status.CANCELLED:
        entry["cancelReason"] = seq.cancel_reason
    return entry


def _request(seq, extended: bool) -> dict:
    entry = {
        "id": seq.id,
        "arrivalMs": seq.arrival_ms,
        "inputTokens": seq.input_tokens,
        "outputTokens": seq.output_tokens,
    }
    if extended:
        if seq.max_output_tokens != seq.output_tokens:
            entry["maxOutputTokens"] = seq.max_output_tokens
        if seq.deadline_ms is not None:
            entry["deadlineMs"] = seq.deadline_ms
        if seq.tenant:
            entry["tenant"] = seq.tenant
        if seq.cancel_ms is not None:
            entry["cancelMs"] = seq.cancel_ms
        if seq.prefix:
            entry["prefix"] = [{"id": sid, "tokens": n} for sid, n in seq.prefix]
        if seq.read_bytes_per_s is not None:
            entry["readBytesPerS"] = seq.read_bytes_per_s
        if seq.reads_ms is not None:
            entry["readsMs"] = list(seq.reads_ms)
        entry |= {
            "status": seq.status.value,
            "statusMs": seq.status_ms,
            "recomputes": seq.recomputes,
            "recomputedTokens": seq.recomputed_tokens,
        }
    entry["tokenTimesMs"] = list(seq.token_times_ms)
    # a plain (not extended) entry has metrics whenever there are tokens, whatever made them
    completed = seq.status is Status.COMPLETED if extended else bool(seq.token_times_ms)
    if completed:
        entry |= request_metrics(seq.arrival_ms, seq.token_times_ms)
    else:
        entry |= NO_METRICS
    return entry


def _event(event, extended: bool, swaps: bool) -> dict:
    entry = {
        "index": event.index,
        "startMs": event.start_ms,
        "endMs": event.end_ms,
        "decode": list(event.batch.decode),
        "prefill": [
            _chunk(chunk, start) for chunk, start in zip(event.batch.prefill, event.prefill_from)
        ],
    }
    if extended:
        entry["preempt"] = list(event.batch.preempt)
    if swaps:
        entry |= {"swapOut": list(event.batch.swap_out), "swapIn": list(event.batch.swap_in)}
    if event.page_ops is not None:  # a prefix cache: its reference changes
        entry["pageOps"] = [list(op) for op in event.page_ops]
    if event.marks:  # the fields a component owns (``features.Component.event_fields``)
        entry |= event.marks
    return entry


# the request fields of client cancels, the prefix cache and output buffers
LIFECYCLE_FIELDS = ("cancelMs", "prefix", "readBytesPerS", "readsMs")


def uses_lifecycle(run: dict) -> bool:
    """Whether a full run entry has client cancels, shared prefixes, a prefix cache or streamed
    output: the compact format does not hold them, so such a run is written in full."""
    device = run["device"]
    if device.get("prefixCaching") or device.get("streamBufferBytes") is not None:
        return True
    return any(key in req for req in run["requests"] for key in LIFECYCLE_FIELDS)


def _chunk(chunk, start: int) -> dict:
    entry = {"id": chunk.id, "fromToken": start, "tokens": chunk.tokens}
    if chunk.cached:  # a prefix hit: the positions before fromToken came from the cache
        entry["cached"] = chunk.cached
    return entry


def build_document(trace: Trace, runs: list[dict]) -> dict:
    return {"formatVersion": FORMAT_VERSION, "trace": trace.raw, "runs": runs}


def dumps(doc: dict, indent: int | None = 2) -> str:
    """The text of a run file: indented, or (``indent=None``: compact runs) without spaces."""
    separators = None if indent is not None else (",", ":")
    text = json.dumps(
        doc, indent=indent, separators=separators, ensure_ascii=False, allow_nan=False
    )
    return text + "\n"


# A run file with more token times than this is written compact unless --format says otherwise.
COMPACT_ABOVE_TOKENS = 100_000


def default_format(trace: Trace, runs: int) -> str:
    """``compact`` for large runs, ``full`` (today's format) otherwise."""
    requests = trace.requests
    total = getattr(requests, "output_total", None)  # a column trace (staff tools) sums its column
    tokens = runs * (total() if total else sum(r.output_tokens for r in requests))
    return "compact" if tokens > COMPACT_ABOVE_TOKENS else "full"


def write_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write ``text`` (or its pieces, in order) to ``path`` so that readers see the old file or
    the new one, never half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.writelines([text] if isinstance(text, str) else text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes the file private; a run file is not
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
