"""The run file: one JSON document with the trace and one run per policy (see schemas/)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from .device import DeviceProfile
from .engine import Timeline
from .faults import FAULTS
from .metrics import request_metrics, summarize
from .trace import Trace

FORMAT_VERSION = 1


def build_run(
    policy: str, params: dict, device: DeviceProfile, timeline: Timeline, fault: str | None
) -> dict:
    """One entry of ``runs``: the raw timeline, metrics recomputed from it, and a summary."""
    requests = []
    for seq in timeline.sequences:
        requests.append(
            {
                "id": seq.id,
                "arrivalMs": seq.arrival_ms,
                "inputTokens": seq.input_tokens,
                "outputTokens": seq.output_tokens,
                "tokenTimesMs": list(seq.token_times_ms),
                **request_metrics(seq.arrival_ms, seq.token_times_ms),
            }
        )
    events = [
        {
            "index": event.index,
            "startMs": event.start_ms,
            "endMs": event.end_ms,
            "decode": list(event.batch.decode),
            "prefill": [
                {"id": chunk.id, "fromToken": start, "tokens": chunk.tokens}
                for chunk, start in zip(event.batch.prefill, event.prefill_from)
            ],
        }
        for event in timeline.events
    ]
    run = {
        "policy": policy,
        "params": dict(params),
        "device": device.to_json(),
        "fault": fault,
        "requests": requests,
        "events": events,
    }
    if fault is not None:
        FAULTS[fault].apply(run)
    run["summary"] = summarize(run["requests"], run["events"])
    return run


def build_document(trace: Trace, runs: list[dict]) -> dict:
    return {"formatVersion": FORMAT_VERSION, "trace": trace.raw, "runs": runs}


def dumps(doc: dict, indent: int | None = 2) -> str:
    return json.dumps(doc, indent=indent, ensure_ascii=False, allow_nan=False) + "\n"


# A run file with more token times than this is written compact unless --format says otherwise.
COMPACT_ABOVE_TOKENS = 100_000


def default_format(trace: Trace, runs: int) -> str:
    """``compact`` for large runs, ``full`` (today's format) otherwise."""
    tokens = runs * sum(r.output_tokens for r in trace.requests)
    return "compact" if tokens > COMPACT_ABOVE_TOKENS else "full"


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, never half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes the file private; a run file is not
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
