"""Unit 08's lesson page: the figures and numbers, all from reference runs made at build time.

Site plug-in (docs/units.md, "Site"): ``infralab site build`` calls ``lesson_context(unit)``.
The runs themselves are in ``lesson_runs.py`` (loaded by path, next to this file); here they
become five figures (timelines, KV pages over time, the tier sweep, open vs closed tails,
the longest step of each second under a token budget and a time budget) and
the values the text quotes. Claims about them sit in lesson.html.j2 next to the sentences.
"""

from __future__ import annotations

import math
from pathlib import Path

from markupsafe import Markup

from grader.sitebuild.charts import Series, bar_chart, line_chart
from grader.sitebuild.plugins import load_module
from grader.sitebuild.svg import Lane, timeline_svg
from grader.units import Unit

lesson_runs = load_module(Path(__file__).with_name("lesson_runs.py"))


def _n(value: float, digits: int = 2) -> str:
    text = f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return text or "0"


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
        f"burst 在 K = {dev['maxActive']}、M = {dev['kvPages']} 页的池子上，每一步结束后被占用的 "
        f"KV 页数随时间（秒）变化：budgeted 按声明的最大输出预留，paged 只按已用长度分配；"
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


def sweep_figures(sweep: dict) -> tuple[str, str]:
    names = [t.name for t in sweep["tiers"]]

    def series(value):
        return [
            Series(n, [(p.load, value(p)) for p in sweep["points"] if p.tier == n]) for n in names
        ]

    loads = "、".join(_n(x) for x in lesson_runs.SWEEP["loads"])
    good = line_chart(
        series(lambda p: p.goodput.goodput_per_s),
        element_id="sweep-goodput",
        title="goodput 随提供负载变化，每个档位一条线",
        desc=f"横轴为提供负载（请求/秒，取 {loads}），纵轴为 goodput（每秒合格请求数）；"
        f"{len(names)} 条线分别是档位 {'、'.join(names)}。",
        x_label="提供负载 (请求/s)",
        y_label="goodput (合格请求/s)",
    )
    p99 = line_chart(
        series(lambda p: p.p99_ttft_ms / 1000),
        element_id="sweep-p99",
        title="p99 TTFT 随提供负载变化，每个档位一条线",
        desc=f"横轴为提供负载（请求/秒），纵轴为 p99 TTFT（秒），被拒绝或取消的请求按无穷晚计；"
        f"超过 1% 的请求没有首 token 时 p99 为无穷大，画成上沿的空心点。档位：{'、'.join(names)}。",
        x_label="提供负载 (请求/s)",
        y_label="p99 TTFT (s)",
        inf_note="空心点：超过 1% 失败，p99 为无穷大",
        inf_label="∞（没有首 token）",
    )
    return good, p99


def loops_figure(loops: dict) -> str:
    groups = ["p50", "p90", "p99"]
    series = [
        (
            f"{word}（{_n(loops['rate' if name == 'closed' else 'open_rate'])} 请求/s）",
            [loops[name][g] / 1000 for g in groups],
        )
        for name, word in (("closed", "闭环"), ("open", "开环"))
    ]
    desc = (
        "同一平均到达率下，闭环（固定用户数、每人收到回答后思考再发）与开环（泊松到达，"
        "事先排定）两次运行的 TTFT 百分位，单位秒；左侧柱为闭环，右侧柱为开环。"
    )
    return bar_chart(
        groups,
        series,
        element_id="loops-ttft",
        title="开环与闭环的 TTFT 尾部",
        desc=desc,
        x_label="TTFT 百分位",
        y_label="TTFT (s)",
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


def _tier_rows(sweep: dict) -> list[dict]:
    rows = []
    for p in sweep["points"]:
        g = p.goodput
        rows.append(
            {
                "tier": p.tier,
                "load": p.load,
                "submitted": g.submitted,
                "rejected": p.rejected,
                "goodput": g.goodput_per_s,
                "attainment": g.attainment_over_submitted,
                "p99": None if math.isinf(p.p99_ttft_ms) else p.p99_ttft_ms,
            }
        )
    return rows


def lesson_context(unit: Unit) -> dict:
    runs = lesson_runs.Runs(unit)
    pair = lesson_runs.batching(runs)
    kv = lesson_runs.kv_pool(runs)
    lifo = lesson_runs.lifo_victim(runs)
    sweep = lesson_runs.sweep(runs)
    ops = lesson_runs.operating_points(sweep)
    loops = lesson_runs.loops(runs)
    good_svg, p99_svg = sweep_figures(sweep)
    timed = lesson_runs.timed_vs_budgeted(runs)
    feasible = [o for o in ops if o["cost"] is not None]
    return {
        "dev": lesson_runs.device(unit).to_json(),
        "batching": pair,
        "batching_svg": Markup(batching_figure(pair)),
        "kv": kv,
        "kv_svg": Markup(kv_figure(kv)),
        "lifo": lifo,
        "sweep": sweep,
        "sweep_rows": _tier_rows(sweep),
        "ops": ops,
        "cheapest": min(feasible, key=lambda o: o["cost"], default=None),
        "goodput_svg": Markup(good_svg),
        "p99_svg": Markup(p99_svg),
        "loops": loops,
        "loops_svg": Markup(loops_figure(loops)),
        "timed": timed,
        "timed_svg": Markup(timed_figure(timed)),
        "settings": {
            "pool": lesson_runs.POOL,
            "loop": lesson_runs.LOOP,
            "loop_device": lesson_runs.LOOP_DEVICE,
            "sweep": lesson_runs.SWEEP,
            "slo": lesson_runs.SLO,
            "target": lesson_runs.TARGET,
            "sizes": lesson_runs.SIZES,
            "k": lesson_runs.BATCH_K,
        },
    }
