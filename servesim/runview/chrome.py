"""The run as a Chrome trace (Trace Event Format, JSON; opens in Perfetto and chrome://tracing).

Process 1 is the device: one complete event per step (its batch in ``args``; a stretch of
decode-only steps of one batch size back to back is one event) and counters for the queue
length and KV pages (when they change). Process 2 holds one thread per request: its wait for
the first token and its decode span, with instant events for preemptions, rejections and
cancellations.
Times are in microseconds, as the format requires.
"""

from __future__ import annotations

from .model import Picture

DEVICE, REQUESTS = 1, 2


def _us(ms: float) -> float:
    return round(ms * 1000.0, 3)


def trace_events(picture: Picture) -> dict:
    events: list[dict] = [
        _meta(DEVICE, 0, "process_name", f"device: {picture.label}"),
        _meta(DEVICE, 0, "thread_name", "steps"),
        _meta(REQUESTS, 0, "process_name", "requests"),
    ]
    tids = {lane.id: n + 1 for n, lane in enumerate(picture.lanes)}
    last_counters = None
    for first, last in _stretches(picture.steps):
        step = picture.steps[first]
        name = f"prefill x{len(step.prefill)} + decode x{len(step.decode)}"
        args = {
            "step": step.index,
            "prefill": [f"{rid}[{start}:{start + n}]" for rid, start, n in step.prefill],
            "decode": len(step.decode),
        }
        if last > first:
            name = f"decode x{len(step.decode)} ({last - first + 1} steps)"
            args["step"] = f"{step.index}..{picture.steps[last].index}"
        for key in ("preempt", "swap_out", "swap_in", "rejected", "cancelled"):
            if getattr(step, key):
                args[key] = list(getattr(step, key))
        start, end = _us(step.start_ms), _us(picture.steps[last].end_ms)
        events.append(
            {"ph": "X", "pid": DEVICE, "tid": 0, "ts": start, "dur": end - start, "name": name}
            | {"args": args}
        )
        for n in range(first, last + 1):
            counters = (picture.steps[n].queue, picture.steps[n].kv_pages)
            if counters != last_counters:
                ts = _us(picture.steps[n].start_ms)
                values = {"queue": counters[0], "kv pages": counters[1]}
                events.append({"ph": "C", "pid": DEVICE, "ts": ts, "name": "load", "args": values})
                last_counters = counters
        for rid in step.preempt:
            events.append(_instant(tids[rid], start, "preempted"))
    for lane in picture.lanes:
        tid = tids[lane.id]
        events.append(_meta(REQUESTS, tid, "thread_name", lane.id))
        times = lane.token_times_ms
        arrival = _us(lane.arrival_ms)
        if times:
            first = _us(times[0])
            events.append(_span(tid, arrival, first, "waiting + prefill (TTFT)"))
            if len(times) > 1:
                events.append(_span(tid, first, _us(times[-1]), f"decode ({len(times)} tokens)"))
        if lane.status in ("rejected", "cancelled") and lane.end_ms is not None:
            events.append(_instant(tid, _us(lane.end_ms), lane.status))
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def _plain_decode(step) -> bool:
    return not (
        step.prefill
        or step.preempt
        or step.swap_out
        or step.swap_in
        or step.rejected
        or step.cancelled
    )


def _stretches(steps) -> list[tuple[int, int]]:
    """Steps as ``(first, last)`` slices: consecutive decode-only steps back to back with the
    same batch size share one slice (a steady decode stretch of a long run is one event)."""
    out: list[tuple[int, int]] = []
    for n, step in enumerate(steps):
        if out and _plain_decode(step):
            first, last = out[-1]
            before = steps[last]
            if (
                _plain_decode(before)
                and before.decode
                and len(before.decode) == len(step.decode)
                and step.start_ms == before.end_ms
            ):
                out[-1] = (first, n)
                continue
        out.append((n, n))
    return out


def _meta(pid: int, tid: int, kind: str, name: str) -> dict:
    return {"ph": "M", "pid": pid, "tid": tid, "name": kind, "args": {"name": name}}


def _span(tid: int, start: float, end: float, name: str) -> dict:
    return {"ph": "X", "pid": REQUESTS, "tid": tid, "ts": start, "dur": end - start, "name": name}


def _instant(tid: int, ts: float, what: str) -> dict:
    return {"ph": "i", "s": "t", "pid": REQUESTS, "tid": tid, "ts": ts, "name": what}
