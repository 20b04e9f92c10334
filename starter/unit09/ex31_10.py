#!/usr/bin/env python3
"""Exercise 31.10 on this lab's engine: an output buffer filled faster than its client reads it.

    python3 ex31_10.py [--json]

The chapter's numbers: tokens are produced at 12 KiB/s, the client reads 4 KiB/s, the buffer
holds 64 KiB, so an empty buffer fills in 64 / (12 - 4) = 8 s. Here one request streams on a
device whose every step lasts 31.25 ms and whose token events take 384 bytes each (384 B per
31.25 ms is exactly 12 KiB/s) into a 64 KiB buffer. The request and its client's read rate come
from this lab's ``traces/ex31-10.json``: as the course ships it, the chapter's 4 KiB/s; in a
student's own lab folder, a rate of their own between 2 and 5 KiB/s, so their fill time is
their own. The engine pauses the stream when the buffer cannot take another event, resumes it
once the client has drained it to the low mark (32 KiB), and, on a device with a pause
deadline shorter than that drain, cancels it instead. The printed figures are read from the
runs: the engine decides on whole events at step ends and pauses when one more event would
not fit, and the client starts reading at the first token, one step in; so the pause comes
before the fluid model's fill time, by less than the net inflow takes to bring one event plus
one step's reads.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servesim import (
    Batch,
    DeviceProfile,
    PrefillChunk,
    Trace,
    TraceError,
    read_trace_file,
    simulate,
)

KIB = 1024
STEP_MS = 31.25
DEVICE = DeviceProfile(
    prefill_ms_per_token=31.0,  # a one-token prompt: 0.25 + 31 = 31.25 ms, like a decode
    decode_batch_ms=31.0,
    overhead_ms=0.25,
    stream_buffer_bytes=64 * KIB,
    stream_event_bytes=384,
    stream_low_mark_bytes=32 * KIB,
)
TRACE_FILE = Path(__file__).resolve().parent / "traces" / "ex31-10.json"
REQUEST_ID = "stream"
DEADLINE_MS = 5000.0  # shorter than the drain from full to the low mark


def stream_aware(view) -> Batch:
    """Decode every running request and prefill every waiting one, except paused streams."""
    decode = [s.id for s in view.running if not s.paused]
    prefill = [PrefillChunk(s.id, s.remaining_prefill) for s in view.waiting if not s.paused]
    return Batch(decode=decode, prefill=prefill)


def load_trace(path: Path = TRACE_FILE) -> Trace:
    """The exercise's trace: one request ``stream`` whose client reads ``readBytesPerS``; a
    ``TraceError`` naming the file if it is not that."""
    trace = read_trace_file(path)
    ids = [r.id for r in trace.requests]
    if ids != [REQUEST_ID] or not trace.requests[0].read_bytes_per_s:
        raise TraceError(
            f"{path}: exercise 31.10 needs one request '{REQUEST_ID}' with a 'readBytesPerS'"
            f" (found requests {ids})"
        )
    return trace


def run_example(deadline_ms: float | None = None, trace: Trace | None = None) -> dict:
    """Run the one-request trace (``load_trace()`` unless given) on ``DEVICE`` (with a pause
    deadline, if given) and return the figures of its stream: pauses, buffer peak, status,
    tokens asked and made, when the client read the end."""
    trace = trace or load_trace()
    device = replace(DEVICE, stream_pause_deadline_ms=deadline_ms)
    timeline = simulate(trace, stream_aware, device)
    seq, record = timeline.sequences[0], timeline.streams[REQUEST_ID]
    return {
        "pauses_ms": record["pausedMs"],
        "buffer_peak_bytes": record["bufferPeakBytes"],
        "status": seq.status.value,
        "status_ms": seq.status_ms,
        "cancel_reason": seq.cancel_reason,
        "output_tokens": trace.requests[0].output_tokens,
        "tokens": seq.generated,
        "ack_ms": record["ackMs"],
        "steps": len(timeline.events),
    }


def figures(trace: Trace | None = None) -> dict:
    """The chapter's closed form, with this lab's read rate, beside the two runs."""
    trace = trace or load_trace()
    produce = DEVICE.stream_event_bytes * 1000 / STEP_MS
    read = trace.requests[0].read_bytes_per_s
    return {
        "produce_bytes_per_s": produce,
        "read_bytes_per_s": read,
        "buffer_bytes": DEVICE.stream_buffer_bytes,
        "fill_s": DEVICE.stream_buffer_bytes / (produce - read),
        "low_mark_bytes": DEVICE.stream_low_mark_bytes,
        "no_deadline": run_example(None, trace),
        "deadline_ms": DEADLINE_MS,
        "with_deadline": run_example(DEADLINE_MS, trace),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    try:
        f = figures()
    except TraceError as exc:
        print(f"ex31_10.py: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(f, indent=2))
        return 0
    free, stall = f["no_deadline"], f["with_deadline"]
    pause, resume = free["pauses_ms"][0]
    produce, read = f["produce_bytes_per_s"] / KIB, f["read_bytes_per_s"] / KIB
    size, event = f["buffer_bytes"] // KIB, DEVICE.stream_event_bytes
    print(f"produced {produce:g} KiB/s, read {read:g} KiB/s")
    print(f"fill time of an empty {size} KiB buffer: {size} / ({produce:g} - {read:g}) = ", end="")
    print(f"{f['fill_s']:g} s")
    print(f"engine: paused at {pause / 1000:.3f} s with {free['buffer_peak_bytes']} bytes ", end="")
    print(f"buffered (no room for another {event}-byte event)")
    print(f"engine: resumed at {resume / 1000:.3f} s, at the low mark ", end="")
    print(
        f"({f['low_mark_bytes'] // KIB} KiB); last token at {free['status_ms'] / 1000:.3f} s, ",
        end="",
    )
    print(f"read by the client at {free['ack_ms'] / 1000:.3f} s")
    print(f"with a {f['deadline_ms'] / 1000:g} s pause deadline: {stall['status']} ", end="")
    print(f"({stall['cancel_reason']}) at {stall['status_ms'] / 1000:.3f} s after ", end="")
    print(f"{stall['tokens']} of {stall['output_tokens']} tokens; its stream is not complete")
    return 0


if __name__ == "__main__":
    sys.exit(main())
