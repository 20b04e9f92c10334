"""Unit 08's lesson figures: timelines, KV pages over time, the protocol sweep with its
intervals, open vs closed tails, the longest step of each second under a token budget and under
a time budget, and padding against waiting for the length buckets.

Each function takes the runs (``lesson_runs.py`` lists them) or the values ``lesson_text.py``
made from them, and returns an SVG with its Chinese title and description.
"""

from __future__ import annotations

import math
from pathlib import Path

from grader.sitebuild.charts import Series, bar_chart, line_chart
from grader.sitebuild.plugins import load_module
from grader.sitebuild.svg import Lane, timeline_svg

_n = load_module(Path(__file__).with_name("lesson_text.py")).number


def batching_figure(pair: dict) -> str:
    desc = (
        "上：static（静态）；下：continuous（连续）；同一时间比例，横轴为毫秒。"
        "琥珀色块是 prefill，绿色块是 decode batch；上方三角标出请求到达，"
        "下方竖线标出各请求的首 token。"
        "static 要等整组都结束才接纳 C，continuous 在 B 结束后的下一步就让 C 补进空位。"
    )
    lanes = [Lane(title, pair[p]) for title, p in (("静态", "static"), ("连续", "continuous"))]
    return timeline_svg(
        lanes, title="static 与 continuous 的提交时间线", desc=desc, element_id="timeline-batching"
    )


def kv_figure(kv: dict) -> str:
    dev = kv["device"]
    series = []
    for policy in ("budgeted", "paged"):
        held = kv["pages"][policy]
        marks = [
            (t, _held_at(held, t), f"{t:.0f} ms 抢占 {rid}") for t, rid in kv["preempts"][policy]
        ]
        series.append(
            Series(
                policy,
                [(t / 1000, p) for t, p in held],
                step=True,
                marks=[(t / 1000, y, tip) for t, y, tip in marks],
            )
        )
    n_pre = len(kv["preempts"]["paged"])
    desc = (
        f"burst 在 K = {dev['maxActive']}、M = {dev['kvPages']} 页的池子上，每一步结束后占用的 "
        f"KV 页数随时间（秒）的变化：budgeted 按声明的最大输出预留，paged 只按已用长度分配；"
        f"水平线是池子上限 M；paged 线上的 {n_pre} 个三角标出抢占发生的时刻。"
    )
    return line_chart(
        series,
        element_id="kv-pages",
        title="KV 页占用随时间变化",
        desc=desc,
        x_label="时间 (s)",
        y_label="占用的 KV 页",
        hline=(dev["kvPages"], f"M = {dev['kvPages']} 页"),
        mark_note="▼ 抢占（重算）",
    )


def _held_at(points: list[tuple[float, int]], t: float) -> int:
    """Pages held just before time ``t`` (the step that preempts starts at ``t``)."""
    value = 0
    for end, pages in points:
        if end > t:
            break
        value = pages
    return value


def _series(sweep: dict, name: str, scale: float = 1.0, most: float = math.inf) -> list[Series]:
    """One line per tier of figure ``name`` times ``scale``; each error bar is the t interval
    cut to the values the figure can take (0 to ``most``): the t interval is symmetric and may
    reach past them, which says nothing about the figure."""
    out = []
    for tier in sweep["tiers"]:
        mine = [c for c in sweep["cells"] if c.tier == tier.name]
        points, errors = [], []
        for c in mine:
            f = c.figures[name]
            points.append((c.load, math.inf if f is None else f.mean * scale))
            bar = None if f is None else (max(f.low * scale, 0.0), min(f.high * scale, most))
            errors.append(bar)
        out.append(Series(tier.name, points, errors=errors))
    return out


def sweep_figures(sweep: dict) -> dict[str, str]:
    protocol = sweep["protocol"]
    names = "、".join(t.name for t in sweep["tiers"])
    loads = "、".join(_n(x) for x in protocol.loads)
    n, conf = len(protocol.seeds), f"{protocol.confidence:.0%}"
    bars = f"竖线：{n} 次重复的 {conf} 置信区间，截在可能的取值内"
    common = f"横轴为提供负载（请求/s，取 {loads}）；{len(sweep['tiers'])} 条线是档位 {names}；"
    target = protocol.attainment_target
    ttft_s = protocol.slo_ttft_ms / 1000
    return {
        "goodput": line_chart(
            _series(sweep, "goodput"),
            element_id="sweep-goodput",
            title="goodput 随提供负载变化，每个档位一条线",
            desc=common + f"纵轴为 goodput（每秒合格请求数），点是 {n} 次重复的均值，竖线是 "
            f"{conf} 置信区间。",
            x_label="提供负载 (请求/s)",
            y_label="goodput (合格请求/s)",
            bar_note=bars,
        ),
        "attainment": line_chart(
            _series(sweep, "attainment", 100, most=100.0),
            element_id="sweep-attainment",
            title="SLO 达成率（以提交数为分母）随提供负载变化",
            desc=common + f"纵轴为达成率（%），点是 {n} 次重复的均值，竖线是 {conf} 置信区间；"
            f"水平线是目标 {target:.0%}。区间整个在线上方才是“可行”。",
            x_label="提供负载 (请求/s)",
            y_label="达成率 (% 提交)",
            hline=(target * 100, f"目标 {target:.0%}"),
            bar_note=bars,
        ),
        "p99": line_chart(
            _series(sweep, "p99_ttft_ms", 1 / 1000),
            element_id="sweep-p99",
            title="p99 TTFT 随提供负载变化，每个档位一条线",
            desc=common + f"纵轴为 p99 TTFT（秒），没拿到首 token 的请求按无穷晚计；某次重复超过 "
            f"1% 的请求没有首 token 时 p99 为无穷大，画成上沿的空心点；竖线是 {conf} 置信区间；"
            f"水平线是 TTFT 的 SLO {_n(ttft_s)} 秒。",
            x_label="提供负载 (请求/s)",
            y_label="p99 TTFT (s)",
            hline=(ttft_s, f"TTFT 目标 {_n(ttft_s)} s"),
            inf_note="空心点：超过 1% 失败，p99 为无穷大",
            inf_label="∞（没有首 token）",
            bar_note=bars,
        ),
    }


def loops_figure(loops: dict, slo_ttft_ms: float) -> str:
    groups = ["p50", "p90", "p99"]
    series, errors = [], []
    for name, word in (("closed", "闭环"), ("open", "开环")):
        figures = [loops[name][f"served_{g}"] for g in groups]
        series.append((word, [f.mean / 1000 for f in figures]))
        errors.append([(f.low / 1000, f.high / 1000) for f in figures])
    desc = (
        f"同一平均到达率（约 {_n(loops['rate'])} 请求/s）下，"
        "闭环（固定用户数、每人收到回答后思考再发）"
        f"与开环（泊松到达，事先排定）各 {loops['n']} 次重复里，窗口内完成的请求的 TTFT 百分位，"
        "单位秒；柱高为重复的均值，竖线为置信区间；左侧柱为闭环，右侧柱为开环。"
        "被拒绝或取消的请求不在这张图里，正文另有计数。"
    )
    return bar_chart(
        groups,
        series,
        element_id="loops-ttft",
        title="开环与闭环的 TTFT 尾部",
        desc=desc,
        x_label="TTFT 百分位",
        y_label="TTFT (s)",
        errors=errors,
        bar_note=f"竖线：{loops['n']} 次重复的 {loops['confidence']:.0%} 置信区间",
        hline=(slo_ttft_ms / 1000, f"TTFT 目标 {_n(slo_ttft_ms / 1000)} s"),
    )


def timed_figure(timed: dict) -> str:
    """The longest step of each second under budgeted and timed, with timed's target."""
    budget, target = timed["params"]["budgeted"]["budget"], timed["target"]
    names = {"budgeted": f"budgeted（B = {budget}）", "timed": f"timed（目标 {target} ms）"}
    series = [
        Series(names[p], [(float(sec), took) for sec, took in timed["seconds"][p]])
        for p in ("budgeted", "timed")
    ]
    desc = (
        f"Azure 对话切片在带上下文项的设备（long-context）上，两种策略每一秒内最长的一步"
        f"（毫秒），横轴为秒；水平线是 timed 的目标步长 {target} ms。budgeted 每步最多 "
        f"{budget} 个新位置，上下文变长时一步变慢；timed 按 view.step_ms 估出的时长装填。"
    )
    return line_chart(
        series,
        element_id="timed-steps",
        title="每秒内最长一步的时长：token 预算与时间预算",
        desc=desc,
        x_label="时间 (s)",
        y_label="最长一步 (ms)",
        hline=(target, f"目标 {target} ms"),
    )


def buckets_figure(buckets: dict) -> str:
    """Padding share against mean TTFT for static batching, one point per wait window."""
    names = {0: "不分桶", **{b: f"每 {b} token 一桶" for b in buckets["settings"]["buckets"] if b}}
    series = []
    for bucket, name in names.items():
        rows = sorted(
            (r for r in buckets["rows"] if r["bucket"] == bucket), key=lambda r: r["ttftMeanMs"]
        )
        series.append(Series(name, [(r["ttftMeanMs"] / 1000, r["padding"] * 100) for r in rows]))
    st = buckets["settings"]
    desc = (
        f"Azure 对话切片的请求长度，以每秒 {_n(st['rate'])} 个的泊松到达重放 {st['requests']} 个，"
        f"K = {st['max_active']}，static 批处理。每个点是一个等待窗口（"
        + "、".join(str(w) for w in st["waits"])
        + " ms）的一次运行：横轴是平均 TTFT（秒），"
        "纵轴是 prefill 步里补齐到最长提示所需的填充位置占比。"
    )
    return line_chart(
        series,
        element_id="buckets-padding",
        title="长度分桶与等待窗口：填充与等待",
        desc=desc,
        x_label="平均 TTFT (s)",
        y_label="填充占比 (%)",
    )
