"""The run as a Chrome trace (Trace Event Format, JSON; opens in Perfetto and chrome://tracing).

Process 1 is the device: one complete event per step (its batch in ``args``; a stretch of
decode-only steps of one batch size back to back is one event) and counters for the queue
length and KV pages (when they change). Process 2 holds one thread per request: its wait for
the first token and its decode span, with instant events for preemptions, rejections and
cancellations.
Times are in microseconds, as the format requires.
"""

from __future__ import annotations

import bisect
from itertools import compress
from operator import ne, not_

from .columns import Columns
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
    cols = picture.columns
    # a counter event at the first step and at each step whose queue or KV pages change
    changed = [0, *cols.changes(cols.queue, cols.kv_pages)] if len(cols) else []
    counters = [
        {
            "ph": "C",
            "pid": DEVICE,
            "ts": _us(cols.start_ms[n]),
            "name": "load",
            "args": {"queue": cols.queue[n], "kv pages": cols.kv_pages[n]},
        }
        for n in changed
    ]
    shown = 0  # counter events placed so far
    moves = [
        (key, getattr(cols, key))
        for key in ("preempt", "swap_out", "swap_in", "rejected", "cancelled")
    ]
    for first, last in stretches(cols):
        prefill, decodes = cols.prefill.get(first, ()), cols.decodes[first]
        name = f"prefill x{len(prefill)} + decode x{decodes}"
        args = {
            "step": first,
            "prefill": [f"{rid}[{start}:{start + n}]" for rid, start, n in prefill],
            "decode": decodes,
        }
        if last > first:
            name = f"decode x{decodes} ({last - first + 1} steps)"
            args["step"] = f"{first}..{last}"
        for key, table in moves:
            if first in table:
                args[key] = list(table[first])
        start, end = _us(cols.start_ms[first]), _us(cols.end_ms[last])
        events.append(
            {"ph": "X", "pid": DEVICE, "tid": 0, "ts": start, "dur": end - start, "name": name}
            | {"args": args}
        )
        upto = bisect.bisect_right(changed, last, shown)
        events += counters[shown:upto]
        shown = upto
        for rid in cols.preempt.get(first, ()):
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


def stretches(cols: Columns) -> list[tuple[int, int]]:
    """Steps as ``(first, last)`` slices: consecutive decode-only steps back to back with the
    same batch size share one slice (a steady decode stretch of a long run is one event).

    A step starts a slice of its own when it or the step before is not a plain decode step,
    the step before decodes nothing or another number of requests, or the device idled
    between them."""
    total = len(cols)
    busy = cols.eventful()
    starts = {0, *busy, *(n + 1 for n in busy if n + 1 < total)}
    starts.update(compress(range(1, total), map(not_, cols.decodes)))  # after no decodes
    starts.update(cols.changes(cols.decodes))
    starts.update(compress(range(1, total), map(ne, cols.start_ms[1:], cols.end_ms)))
    firsts = sorted(n for n in starts if n < total)
    return list(zip(firsts, [n - 1 for n in firsts[1:]] + [total - 1]))


def _meta(pid: int, tid: int, kind: str, name: str) -> dict:
    return {"ph": "M", "pid": pid, "tid": tid, "name": kind, "args": {"name": name}}


def _span(tid: int, start: float, end: float, name: str) -> dict:
    return {"ph": "X", "pid": REQUESTS, "tid": tid, "ts": start, "dur": end - start, "name": name}


def _instant(tid: int, ts: float, what: str) -> dict:
    return {"ph": "i", "s": "t", "pid": REQUESTS, "tid": tid, "ts": ts, "name": what}
