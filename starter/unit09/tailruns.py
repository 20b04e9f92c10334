"""Exercise 31.13's situations on this lab's engine (given; not graded).

One device whose memory stays free (a pool of 8,192 pages) but which holds at most K = 8
sequences at once: a decode step of 8 sequences takes 10 + 8 x 0.2 = 11.6 ms, a prefill token
0.05 ms. Four ways to load it, each built so its cause is known:

- ``light``: a request every 400 ms (2.5/s); the slots serve about 11/s. The baseline.
- ``overload``: a request every 40 ms (25/s), more than twice what the slots serve.
- ``long prompts``: the light load plus a 6,000-token prompt every second. With a token budget
  of 8,192 a step, each such prompt is prefilled in one 300 ms step that every decoding stream
  waits for; the device is busy a third of the time, so capacity is not the problem.
- ``slow clients``: the light load on a streaming device (a 2 KiB output buffer per request,
  64 bytes an event); every fourth request is read at 1,500 bytes/s while its stream produces
  about 5,000. Needs an engine with streaming output.

``fill_slots`` is the scheduler of these runs: decode everything running, then prefill the
queue in order within the budget while fewer than K sequences hold KV.
"""

from __future__ import annotations

from dataclasses import fields

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
BUDGET = 8192  # tokens a step: a whole 6,000-token prompt fits, so prefill is not chunked
SLOW_READ, FAST_READ = 1500.0, 1_000_000.0  # bytes/s a client reads


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


def short_requests(every_ms: float, count: int = 60, shift: int = 0) -> list[dict]:
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


def long_prompts(every_ms: float, until_ms: float) -> list[dict]:
    """A 6,000-token prompt with a 4-token answer every ``every_ms`` from 300 ms."""
    count = int((until_ms - 300) // every_ms)
    return [
        {"id": f"long{i}", "arrivalMs": 300 + i * every_ms, "inputTokens": 6000, "outputTokens": 4}
        for i in range(count)
    ]


def slow_readers(rows: list[dict], every: int = 4) -> list[dict]:
    """The rows with a client read rate each: every ``every``-th reads slowly and gets 192
    tokens out, enough to fill its buffer."""
    out = []
    for i, row in enumerate(rows):
        slow = i % every == 0
        out.append(
            row
            | {"readBytesPerS": SLOW_READ if slow else FAST_READ}
            | ({"outputTokens": 192} if slow else {})
        )
    return out


SITUATIONS = {
    "light": lambda: short_requests(400),
    "overload": lambda: short_requests(40),
    "long prompts": lambda: short_requests(400) + long_prompts(1000, 24_000),
    "slow clients": lambda: slow_readers(short_requests(400)),
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
    return engine_run(short_requests(400, shift=2))
