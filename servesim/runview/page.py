"""The HTML page: one self-contained file, labels in Chinese (TTFT/ITL/prefill/decode as in the
course), data embedded as JSON and the step and request tables drawn a page of rows at a time
by a small script, so that a 20,000-request run opens as fast as a small one. The overview
chart (queue length and KV pages against the pool, over time) is drawn here, aggregated to at
most ``COLUMNS`` columns (the maximum of each).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator
from itertools import chain, groupby, pairwise, repeat, starmap
from operator import mul, neg, sub
from pathlib import Path

from ..htmlsafe import script_data, text
from .columns import Columns
from .diff import Difference
from .marks import mark_rows
from .model import Picture

COLUMNS = 600
WIDTH, HEIGHT = 720, 180
TICKS_UP_TO = 200_000  # token ticks in the lanes while the run has at most this many tokens
STATUS = {"completed": 0, "rejected": 1, "cancelled": 2, "unfinished": 3}


def _asset(name: str) -> str:
    """A file of this package (the page's template, style and script)."""
    return (Path(__file__).parent / name).read_text(encoding="utf-8")


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def run_lengths(values) -> list[int]:
    """``values`` as the run lengths of their differences: ``[delta, repeats, ...]`` (a run of
    steady decode steps, each as long as the last and with the same queue, takes 2 numbers)."""
    # each value less the one before it (the first less 0), as an iterator: nothing is listed
    deltas = map(neg, starmap(sub, pairwise(chain((0,), values))))
    return delta_runs(deltas)


def delta_runs(deltas) -> list[int]:
    """``run_lengths`` of the values whose differences are ``deltas`` (any iterable): each
    element is passed over at C level (``groupby``, ``list``), each run in Python."""
    out: list[int] = []
    for delta, run in groupby(deltas):
        out += (delta, len(list(run)))
    return out


def from_run_lengths(encoded: list[int]) -> list[int]:
    """The inverse of ``run_lengths`` (the page's script does the same)."""
    values, value = [], 0
    for n in range(0, len(encoded), 2):
        for _ in range(encoded[n + 1]):
            value += encoded[n]
            values.append(value)
    return values


def step_columns(cols: Columns) -> dict:
    """Each step's end (µs), queue length, KV pages and decode count, run-length encoded;
    its start is the previous end (0 for the first) unless ``idle`` lists it (``[step, µs]``)."""
    ends = cols.end_ms
    idle = []
    for n in cols.idle():  # only those are rounded and compared
        start = round(cols.start_ms[n] * 1000)
        if start != (round(ends[n - 1] * 1000.0) if n else 0):
            idle.append([n, start])
    return {
        "t1": run_lengths(map(round, map(mul, ends, repeat(1000.0)))),
        "idle": idle,
        "q": delta_runs(cols.deltas("queue")),
        "kv": delta_runs(cols.deltas("kv_pages")),
        "nd": delta_runs(cols.deltas("decodes")),
    }


def page_data(picture: Picture, difference: Difference | None) -> dict:
    """What the script draws from; ids appear once (``ids``), everything else by index."""
    return json.loads("".join(data_pieces(picture, difference)))


def data_pieces(picture: Picture, difference: Difference | None) -> Iterator[str]:
    """``page_data`` as JSON text, a member at a time (the page is written as they come, so
    the whole text of a long run is never held twice)."""
    lanes = picture.lanes
    index = {lane.id: n for n, lane in enumerate(lanes)}
    cols = picture.columns

    yield '{"ids":' + script_data([lane.id for lane in lanes])
    yield f',"n":{len(cols)}'
    for key, value in step_columns(cols).items():
        # a list of ints: its repr is its JSON with spaces, and much quicker to make
        yield f',"{key}":' + (repr(value).replace(" ", "") if key != "idle" else script_data(value))
    prefill = cols.prefill
    pf = [
        [n, index[rid], start, tokens] for n in sorted(prefill) for rid, start, tokens in prefill[n]
    ]
    yield ',"pf":' + script_data(pf)
    for key, table in (
        ("din", cols.enter),
        ("dout", cols.leave),
        ("pe", cols.preempt),
        ("so", cols.swap_out),
        ("si", cols.swap_in),
        ("rj", cols.rejected),
        ("cc", cols.cancelled),
    ):
        yield f',"{key}":' + script_data(
            [[n, index[rid]] for n in sorted(table) for rid in table[n]]
        )
    yield ',"la":' + script_data([_r(lane.arrival_ms) for lane in lanes])
    yield ',"le":' + script_data([_r(lane.end_ms) for lane in lanes])
    yield ',"ls":' + script_data([STATUS.get(lane.status, 3) for lane in lanes])
    yield ',"lt":' + script_data([_r(lane.ttft_ms) for lane in lanes])
    yield ',"lm":' + script_data([_r(lane.max_itl_ms) for lane in lanes])
    if sum(lane.tokens for lane in lanes) <= TICKS_UP_TO:
        yield ',"lk":' + script_data([[_r(t) for t in times] for times in picture.token_times()])
    else:
        yield ',"lk":' + script_data([[] for _ in lanes])
    yield ',"lf":' + script_data([_r(lane.first_ms) for lane in lanes])
    if marked := mark_rows(picture.steps):  # components' marks (``Component.view``)
        yield ',"mk":' + script_data(marked)
    yield ',"pool":' + script_data(picture.pool)
    end = max(max(cols.end_ms, default=0), *(lane.end_ms or 0 for lane in lanes), 0)
    yield ',"end":' + script_data(_r(end))
    found = None if difference is None else {"step": difference.step, "text": difference.zh}
    yield ',"diff":' + script_data(found) + "}"


def overview_columns(cols, end: float) -> tuple[list[int], list[int]]:
    """Queue length and KV pages per chart column (``COLUMNS`` of them over ``[0, end]``):
    the maximum of the steps starting in it; a column without one (the device idle, e.g.
    while every stream is paused) keeps the level of the last step before it."""

    def column(start_ms: float) -> int:
        return min(int(start_ms / end * COLUMNS), COLUMNS - 1)

    # steps start in time order, so each column's steps are one slice of the step columns
    bounds = [bisect.bisect_left(cols.start_ms, c, key=column) for c in range(COLUMNS + 1)]

    def per_column(values: list[int]) -> list[int]:
        return [max(values[a:b]) if a < b else values[a - 1] if a else 0
                for a, b in zip(bounds, bounds[1:])]  # fmt: skip

    return per_column(cols.queue), per_column(cols.kv_pages)


def overview_svg(picture: Picture) -> str:
    """Queue length and KV pages over time, the maximum per column; the pool as a dashed line."""
    cols = picture.columns
    if not len(cols):
        return "<p>这次运行没有任何步。</p>"
    end = max(cols.end_ms) or 1.0
    queue, pages = overview_columns(cols, end)
    top = max(*queue, *pages, picture.pool or 0, 1)

    def line(values: list[int]) -> str:
        points = " ".join(
            f"{40 + c * (WIDTH - 50) / COLUMNS:.1f},{HEIGHT - 20 - v * (HEIGHT - 30) / top:.1f}"
            for c, v in enumerate(values)
        )
        return points

    pool = ""
    if picture.pool:
        y = HEIGHT - 20 - picture.pool * (HEIGHT - 30) / top
        pool = (
            f'<line x1="40" x2="{WIDTH - 10}" y1="{y:.1f}" y2="{y:.1f}" class="pool"/>'
            f'<text x="{WIDTH - 12}" y="{y - 3:.1f}" text-anchor="end">'
            f"KV 池 {picture.pool} 页</text>"
        )
    label = (
        f"队列长度最大 {max(queue)}，KV 页最多 {max(pages)}"
        + (f"（池共 {picture.pool} 页）" if picture.pool else "")
        + f"，运行 {end:.2f} ms"
    )
    return (
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{text(label)}">'
        f'<line x1="40" x2="40" y1="10" y2="{HEIGHT - 20}" class="axis"/>'
        f'<line x1="40" x2="{WIDTH - 10}" y1="{HEIGHT - 20}" y2="{HEIGHT - 20}" class="axis"/>'
        f'<text x="36" y="14" text-anchor="end">{top}</text>'
        f'<text x="36" y="{HEIGHT - 20}" text-anchor="end">0</text>'
        f'<text x="40" y="{HEIGHT - 4}">0 ms</text>'
        f'<text x="{WIDTH - 10}" y="{HEIGHT - 4}" text-anchor="end">{end:.1f} ms</text>'
        f'<polyline class="queue" points="{line(queue)}"/>'
        f'<polyline class="kv" points="{line(pages)}"/>{pool}</svg>'
    )


def _summary(picture: Picture) -> str:
    s = picture.summary
    rows = [
        ("请求数", s.get("requests")),
        ("步数", len(picture.columns)),
        ("全部完成 (ms)", _fmt(s.get("allDoneMs"))),
    ]
    for key, name in (("ttftMs", "TTFT"), ("itlMs", "ITL")):
        figures = s.get(key) or {}
        if figures.get("count"):
            rows.append(
                (f"{name} p50 / p99 (ms)", f"{_fmt(figures['p50'])} / {_fmt(figures['p99'])}")
            )
    for key, name in (("completed", "完成"), ("rejected", "拒绝"), ("cancelled", "取消")):
        if key in s:
            rows.append((name, s[key]))
    if "recomputes" in s:
        rows.append(("抢占（重算）", s["recomputes"]))
    cells = "".join(f"<dt>{text(k)}</dt><dd>{text(v)}</dd>" for k, v in rows)
    return f"<dl>{cells}</dl>"


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def render(
    picture: Picture, trace_name: str, difference: Difference | None, against: str | None
) -> str:
    return "".join(render_pieces(picture, trace_name, difference, against))


def render_pieces(
    picture: Picture, trace_name: str, difference: Difference | None, against: str | None
) -> Iterator[str]:
    """The page, in pieces to write one after another (``render`` joins them)."""
    title = f"运行图：{picture.label}（trace {trace_name}）"
    diff = ""
    if difference is not None:
        diff = (
            '<section aria-labelledby="diff-h" class="diff-box">'
            '<h2 id="diff-h">第一个不同之处</h2>'
            f"<p>与 {text(against or '')} 相比："
            f"<strong>{text(difference.zh)}</strong></p>"
            f'<button type="button" id="go-diff">跳到第 {difference.step} 步</button></section>'
        )
    elif against:
        diff = (
            '<section aria-labelledby="diff-h" class="diff-box"><h2 id="diff-h">比较</h2>'
            f"<p>与 {text(against)} 相比：每一步都相同。</p></section>"
        )
    device = ", ".join(f"{k}={v}" for k, v in picture.device.items() if v is not None)
    head, tail = _asset("page.html").split("{data}")
    yield head.format(
        title=text(title),
        device=text(device),
        summary=_summary(picture),
        diff=diff,
        overview=overview_svg(picture),
        style=_asset("view.css"),
    )
    yield from data_pieces(picture, difference)
    yield tail.format(script=_asset("view.js"))
