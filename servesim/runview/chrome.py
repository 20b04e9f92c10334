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
import json
from collections.abc import Iterator

from .columns import Columns
from .model import Picture

DEVICE, REQUESTS = 1, 2


def _us(ms: float) -> float:
    return round(ms * 1000.0, 3)


def trace_events(picture: Picture) -> dict:
    """The trace as the file holds it (``trace_pieces``, read back)."""
    return json.loads("".join(trace_pieces(picture)))


def trace_pieces(picture: Picture) -> Iterator[str]:
    """The trace file's JSON text, in pieces of many events each: events are written as text
    as they are made (a long run has hundreds of thousands), never held as dicts."""
    yield '{"traceEvents":['
    yield ",".join(
        (
            _meta(DEVICE, 0, "process_name", f"device: {picture.label}"),
            _meta(DEVICE, 0, "thread_name", "steps"),
            _meta(REQUESTS, 0, "process_name", "requests"),
        )
    )
    lanes = picture.lanes
    tids = {lane.id: n + 1 for n, lane in enumerate(lanes)}
    quoted = {lane.id: _dump(lane.id) for lane in lanes}  # each id as a JSON string
    cols = picture.columns
    queue, pages, starts, ends = cols.queue, cols.kv_pages, cols.start_ms, cols.end_ms
    # a counter event at the first step and at each step whose queue or KV pages change
    changed = [0, *cols.changes("queue", "kv_pages")] if len(cols) else []
    counter = ',{"ph":"C","pid":1,"ts":%r,"name":"load","args":{"queue":%d,"kv pages":%d}}'
    counters = [counter % (round(starts[n] * 1000.0, 3), queue[n], pages[n]) for n in changed]
    shown = 0  # counter events placed so far
    moves = [
        (key, getattr(cols, key))
        for key in ("preempt", "swap_out", "swap_in", "rejected", "cancelled")
    ]
    prefills, decodes, preempts = cols.prefill, cols.decodes, cols.preempt
    out: list[str] = []
    for first, last in stretches(cols):
        prefill, count = prefills.get(first, ()), decodes[first]
        if last > first:
            name, step = f"decode x{count} ({last - first + 1} steps)", f'"{first}..{last}"'
        else:
            name, step = f"prefill x{len(prefill)} + decode x{count}", first
        head = f'"name":"{name}","args":{{"step":{step}'
        chunks = ",".join(f'{quoted[rid][:-1]}[{a}:{a + n}]"' for rid, a, n in prefill)
        args = f'"prefill":[{chunks}],"decode":{count}'
        for key, table in moves:
            if first in table:
                args += f',"{key}":[{",".join(map(quoted.__getitem__, table[first]))}]'
        start, end = round(starts[first] * 1000.0, 3), round(ends[last] * 1000.0, 3)
        out.append(
            f',{{"ph":"X","pid":1,"tid":0,"ts":{start!r},"dur":{end - start!r},{head},{args}}}}}'
        )
        upto = bisect.bisect_right(changed, last, shown)
        out += counters[shown:upto]
        shown = upto
        for rid in preempts.get(first, ()):
            out.append("," + _instant(tids[rid], start, "preempted"))
        if len(out) > 10_000:
            yield "".join(out)
            out.clear()
    del counters
    for lane in lanes:
        tid = tids[lane.id]
        out.append(
            f',{{"ph":"M","pid":2,"tid":{tid},"name":"thread_name","args":{{"name":{quoted[lane.id]}}}}}'
        )
        arrival = _us(lane.arrival_ms)
        if lane.tokens:
            first = _us(lane.first_ms)
            out.append("," + _span(tid, arrival, first, "waiting + prefill (TTFT)"))
            if lane.tokens > 1:
                name = f"decode ({lane.tokens} tokens)"
                out.append("," + _span(tid, first, _us(lane.last_ms), name))
        if lane.status in ("rejected", "cancelled") and lane.end_ms is not None:
            out.append("," + _instant(tid, _us(lane.end_ms), lane.status))
        if len(out) > 10_000:
            yield "".join(out)
            out.clear()
    out.append('],"displayTimeUnit":"ms"}\n')
    yield "".join(out)


def stretches(cols: Columns) -> list[tuple[int, int]]:
    """Steps as ``(first, last)`` slices: consecutive decode-only steps back to back with the
    same batch size share one slice (a steady decode stretch of a long run is one event).

    A step starts a slice of its own when it or the step before is not a plain decode step,
    the step before decodes nothing or another number of requests, or the device idled
    between them."""
    total = len(cols)
    busy = cols.eventful()
    starts = {0, *busy, *(n + 1 for n in busy if n + 1 < total)}
    changed = cols.changes("decodes")
    starts.update(changed)
    starts.update(n for n in cols.idle() if n)
    # after a step that decodes nothing: the count is 0 from a change (or step 0) to the next
    decodes = cols.decodes
    for begin, end in zip([0, *changed], [*changed, total]):
        if not decodes[begin]:
            starts.update(range(begin + 1, end + 1))
    firsts = sorted(n for n in starts if n < total)
    return list(zip(firsts, [n - 1 for n in firsts[1:]] + [total - 1]))


def _dump(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _meta(pid: int, tid: int, kind: str, name: str) -> str:
    return (
        f'{{"ph":"M","pid":{pid},"tid":{tid},"name":{_dump(kind)},"args":{{"name":{_dump(name)}}}}}'
    )


def _span(tid: int, start: float, end: float, name: str) -> str:
    """A request's span (``name``: plain ASCII, no quotes)."""
    return (
        f'{{"ph":"X","pid":{REQUESTS},"tid":{tid},"ts":{start!r},"dur":{end - start!r},'
        f'"name":"{name}"}}'
    )


def _instant(tid: int, ts: float, what: str) -> str:
    """An instant on a request's thread (``what``: plain ASCII, no quotes)."""
    return f'{{"ph":"i","s":"t","pid":{REQUESTS},"tid":{tid},"ts":{ts!r},"name":"{what}"}}'
