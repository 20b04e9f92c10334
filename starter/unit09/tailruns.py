"""Exercise 31.13's situations on this lab's engine (given; not graded).

One device whose memory stays free (a pool of 8,192 pages) but which holds at most K = 8
sequences at once: a decode step of 8 sequences takes 10 + 8 x 0.2 = 11.6 ms, a prefill token
0.05 ms. Four ways to load it, each built so its cause is known. The numbers of each load are
this lab's own, read from ``tailruns.json`` beside this file; the course's own file has the
ones in brackets:

- ``light``: 60 short requests, one every ``everyMs`` (400 ms: 2.5/s); the slots serve about
  11/s. The baseline.
- ``overload``: the same 60 requests, one every ``everyMs`` (40 ms: 25/s), about twice what
  the slots serve or more (22/s at 46 ms, the sparsest overload a lab may draw).
- ``long prompts``: the light load plus, from 300 ms on, an ``inputTokens``-token prompt (6,000)
  every ``everyMs`` (1 s) while the light load lasts. With a token budget of 8,192 a step, each
  such prompt is prefilled in one step (300 ms) that every decoding stream waits for; those
  steps take about a third of the time (0.31 to 0.41 with the numbers a lab may draw), so
  capacity is not the problem.
- ``slow clients``: the light load on a streaming device (a 2 KiB output buffer per request,
  64 bytes an event); one request in ``every`` (4) is read at ``readBytesPerS`` (1,500
  bytes/s) while its stream produces about 5,000, and gets 192 tokens out, enough to fill its
  buffer. Needs an engine with streaming output.

``pattern`` shifts the short requests' cycle of prompt and output lengths: ``shift`` for the
four loads (0), ``baselineShift`` for the baseline (2), the light load drawn again.

``fill_slots`` is the scheduler of these runs: decode everything running, then prefill the
queue in order within the budget while fewer than K sequences hold KV.
"""

from __future__ import annotations

import functools
import json
from dataclasses import fields
from pathlib import Path

from servesim import Batch, DeviceProfile, PrefillChunk, Wait, parse_trace, simulate
from servesim.runfile import build_run

DEVICE = {
    "prefillMsPerToken": 0.05,
    "decodeBatchMs": 10.0,
    "decodeMsPerSeq": 0.2,
    "maxActive": 8,
    "kvPages": 8192,
}
STREAMING = {
    "streamBufferBytes": 2048,
    "streamEventBytes": 64,
    "streamLowMarkBytes": 1024,
    "streamPauseDeadlineMs": 5000.0,
}
BUDGET = 8192  # tokens a step: a whole long prompt fits, so prefill is not chunked
FAST_READ = 1_000_000.0  # bytes/s a client that keeps up reads
COUNT = 60  # short requests in every load
SLOW_OUTPUT = 192  # tokens a slow reader gets: enough to fill its buffer
VALUES_FILE = Path(__file__).resolve().parent / "tailruns.json"
# what tailruns.json holds: {situation: {field: (type, least)}}
FIELDS = {
    "light": {"everyMs": (int, 1)},
    "overload": {"everyMs": (int, 1)},
    "long prompts": {"everyMs": (int, 1), "inputTokens": (int, 1)},
    "slow clients": {"every": (int, 1), "readBytesPerS": (float, 1)},
    "pattern": {"shift": (int, 0), "baselineShift": (int, 0)},
}


class ValuesError(ValueError):
    """``tailruns.json`` is not what the situations need; the message names the file."""


def parse_values(doc, source: str) -> dict:
    """``doc`` (a decoded ``tailruns.json``) checked: each situation's fields, numbers of the
    right kind and size, a long prompt that fits in one step's budget; a ``ValuesError``
    naming ``source`` and the first thing wrong otherwise."""
    if not isinstance(doc, dict):
        raise ValuesError(f"{source}: the top level must be an object")
    for name, want in FIELDS.items():
        part = doc.get(name)
        if not isinstance(part, dict):
            raise ValuesError(f"{source}: field {name!r} must be an object")
        for field, (kind, least) in want.items():
            value = part.get(field)
            ok = isinstance(value, (int, float) if kind is float else int)
            if not ok or isinstance(value, bool) or value < least:
                what = "a number" if kind is float else "an integer"
                raise ValuesError(f"{source}: {name}.{field} must be {what} >= {least}")
    if doc["long prompts"]["inputTokens"] > BUDGET:
        raise ValuesError(f"{source}: long prompts.inputTokens must fit a step ({BUDGET})")
    return doc


def load_values(path: Path = VALUES_FILE) -> dict:
    """The situations' numbers from ``path`` (``parse_values``); a ``ValuesError`` naming the
    file if it cannot be read or is not what they need."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValuesError(f"{path}: cannot be read as JSON: {exc}") from None
    return parse_values(doc, str(path))


@functools.cache
def values() -> dict:
    """This lab's ``tailruns.json``, read once."""
    return load_values()


def engine_streams() -> bool:
    """Whether this engine has streaming output (the device knows ``streamBufferBytes``)."""
    return "stream_buffer_bytes" in {f.name for f in fields(DeviceProfile)}


def fill_slots(view, budget: int) -> Batch | Wait:
    """Decode every running request, then prefill ``view.waiting`` in order within ``budget``
    while fewer than K sequences hold KV; the first that cannot start ends the walk. A paused
    stream (its output buffer full) keeps its slot and gets nothing; when only paused streams
    could run, wait until the first of them drains to the low mark."""
    paused = tuple(getattr(view, "paused", ()))
    held = {s.id for s in paused}
    decode = [s.id for s in view.running if s.id not in held]
    left, active, chunks = budget - len(decode), view.active, []
    for waiting in view.waiting:
        if left <= 0:
            break
        if waiting.id in held:
            continue
        if not waiting.holds_kv:
            if view.device.max_active is not None and active >= view.device.max_active:
                break
            active += 1
        size = min(left, waiting.remaining_prefill)
        chunks.append(PrefillChunk(waiting.id, size))
        left -= size
    if decode or chunks or not paused:
        return Batch(decode=decode, prefill=chunks)
    low = view.device.stream_low_mark_bytes
    return Wait(
        min(view.now_ms + (view.buffer_bytes(s) - low) * 1000 / s.read_bytes_per_s for s in paused)
    )


def short_requests(every_ms: float, count: int = COUNT, shift: int = 0) -> list[dict]:
    """``count`` requests ``every_ms`` apart: prompts of 100-300 tokens, 48-80 tokens out
    (``shift`` moves the pattern: another draw of the same load)."""
    return [
        {
            "id": f"r{i}",
            "arrivalMs": i * every_ms,
            "inputTokens": 100 + 50 * ((i + shift) % 5),
            "outputTokens": 48 + 8 * ((i * 3 + shift) % 5),
        }
        for i in range(count)
    ]


def long_prompts(every_ms: float, until_ms: float, tokens: int) -> list[dict]:
    """A ``tokens``-token prompt with a 4-token answer every ``every_ms`` from 300 ms."""
    count = int((until_ms - 300) // every_ms)
    return [
        {
            "id": f"long{i}",
            "arrivalMs": 300 + i * every_ms,
            "inputTokens": tokens,
            "outputTokens": 4,
        }
        for i in range(count)
    ]


def slow_readers(rows: list[dict], every: int, read_bytes_per_s: float) -> list[dict]:
    """The rows with a client read rate each: every ``every``-th reads ``read_bytes_per_s``
    and gets ``SLOW_OUTPUT`` tokens out, enough to fill its buffer."""
    out = []
    for i, row in enumerate(rows):
        slow = i % every == 0
        out.append(
            row
            | {"readBytesPerS": read_bytes_per_s if slow else FAST_READ}
            | ({"outputTokens": SLOW_OUTPUT} if slow else {})
        )
    return out


def light() -> list[dict]:
    v = values()
    return short_requests(v["light"]["everyMs"], shift=v["pattern"]["shift"])


def overload() -> list[dict]:
    v = values()
    return short_requests(v["overload"]["everyMs"], shift=v["pattern"]["shift"])


def with_long_prompts() -> list[dict]:
    """The light load and, while it lasts, the long prompts."""
    long, span = values()["long prompts"], COUNT * values()["light"]["everyMs"]
    return light() + long_prompts(long["everyMs"], span, long["inputTokens"])


def with_slow_clients() -> list[dict]:
    slow = values()["slow clients"]
    return slow_readers(light(), slow["every"], slow["readBytesPerS"])


SITUATIONS = {
    "light": light,
    "overload": overload,
    "long prompts": with_long_prompts,
    "slow clients": with_slow_clients,
}


def engine_run(rows: list[dict], budget: int = BUDGET, queue_cap=None, **device) -> dict:
    """An extended run entry of ``fill_slots`` on ``DEVICE`` (changed by ``device``: camelCase
    settings) for the request ``rows``; the streaming settings join when a row has a read
    rate."""
    settings = DEVICE | (STREAMING if any("readBytesPerS" in r for r in rows) else {}) | device
    profile = DeviceProfile.from_json(settings, source="31.13 device")
    rows = sorted(rows, key=lambda r: r["arrivalMs"])
    trace = parse_trace({"name": "31.13", "requests": rows}, source="31.13 trace")
    timeline = simulate(
        trace, lambda view: fill_slots(view, budget), profile, budget=budget, queue_cap=queue_cap
    )
    limits = {"budget": budget, "queueCap": queue_cap}
    return build_run("fill_slots", {"budget": budget}, profile, timeline, None, extended=True,
                     limits=limits)  # fmt: skip


def baseline_run() -> dict:
    """The light load drawn again (another pattern): the run a diagnosis compares with."""
    v = values()
    return engine_run(short_requests(v["light"]["everyMs"], shift=v["pattern"]["baselineShift"]))
