"""Small run entries for the measure.py tests: request records and events built by hand, with
just the fields measure.py reads (see schemas/run.schema.json for the full ones)."""

from __future__ import annotations


def request(rid, arrival, tokens=(), status="completed", end=None, inputs=100, **extra):
    """A request record; ``statusMs`` is its last token unless ``end`` says otherwise."""
    tokens = list(tokens)
    if end is None:
        end = tokens[-1] if tokens else arrival
    record = {
        "id": rid,
        "arrivalMs": arrival,
        "inputTokens": inputs,
        "status": status,
        "statusMs": end,
        "tokenTimesMs": tokens,
    }
    return record | extra


def event(start, end, decode=(), prefill=()):
    """An event; ``prefill`` holds ``(id, fromToken, tokens)`` or ``(id, fromToken, tokens,
    cached)`` tuples."""
    chunks = []
    for chunk in prefill:
        entry = {"id": chunk[0], "fromToken": chunk[1], "tokens": chunk[2]}
        if len(chunk) > 3:
            entry["cached"] = chunk[3]
        chunks.append(entry)
    return {"startMs": start, "endMs": end, "decode": list(decode), "prefill": chunks}


def run(requests, events=(), **device):
    """A run entry: the requests, the events and a device with the given settings."""
    return {"requests": list(requests), "events": list(events), "device": dict(device)}
