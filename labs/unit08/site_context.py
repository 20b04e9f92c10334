"""Unit 08's lesson page: the figures and numbers, all from reference runs made at build time.

Site plug-in (docs/units.md, "Site"): ``infralab site build`` calls ``lesson_context(unit)``.
The runs themselves are in ``lesson_runs.py`` (loaded by path, next to this file); here they
become the figures (timelines, KV pages over time, the protocol sweep with its intervals, open
vs closed tails, the longest step of each second under a token budget and under a time budget)
and the values the text quotes. Claims about them sit in lesson.html.j2 next to the sentences; a
claim about protocol runs is checked in every replication, or the page states it as "in k of n
replications" or with its interval.
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
lesson_steadiness = load_module(Path(__file__).with_name("lesson_steadiness.py"))
lesson_calibrated = load_module(Path(__file__).with_name("lesson_calibrated.py"))

VERDICT_ZH = {"feasible": "可行", "infeasible": "不可行", "not yet known": "尚不能确定"}


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


def _kv_draws(kv: dict) -> dict:
    """How often each burst claim holds over the other draws of the burst generator."""
    draws = kv["draws"]
    m = kv["device"]["kvPages"]

    def count(test) -> int:
        return sum(1 for d in draws if test(d["budgeted"], d["paged"]))

    return {
        "n": len(draws),
        "within_pool": count(lambda b, p: b["peak"] <= m and p["peak"] <= m),
        "budgeted_never": count(lambda b, p: not b["preempts"]),
        "paged_preempts": count(lambda b, p: bool(p["preempts"])),
        "peak_below": count(lambda b, p: b["peak"] < p["peak"]),
        "paged_completes_more": count(
            lambda b, p: p["run"].summary["completed"] > b["run"].summary["completed"]
        ),
    }


def _pm(figure, scale: float = 1.0, digits: int = 2) -> dict | None:
    """An interval as the template shows it: mean and half-width as text with ``digits``
    decimals, and its ends (scaled)."""
    if figure is None:
        return None
    return {
        "mean": f"{figure.mean * scale:.{digits}f}",
        "half": f"{(figure.high - figure.low) / 2 * scale:.{digits}f}",
        "low": figure.low * scale,
        "high": figure.high * scale,
    }


def _decide(cell) -> str:
    v = cell.verdict
    if v.outcome != "not yet known":
        return ""
    if v.longer_runs:
        return "需要更长的运行"
    if v.replications_needed is None:
        return "按目前的离散程度，1,000 次重复也定不下来"
    return f"约需 {v.replications_needed} 次重复"


def _rows(cells) -> list[dict]:
    return [
        {
            "tier": c.tier,
            "load": c.load,
            "outcome": c.outcome,
            "verdict": VERDICT_ZH[c.outcome],
            "goodput": _pm(c.figures["goodput"]),
            "attainment": _pm(c.figures["attainment"], 100, 1),
            "succeeded": _pm(c.figures["attainment_succeeded"], 100, 1),
            "p99": _pm(c.figures["p99_ttft_ms"], 1, 0),
            "quality": _pm(c.figures["quality"], 100, 1),
            "steady": c.steady,
            "n": len(c.replications),
            "decide": _decide(c),
        }
        for c in cells
    ]


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
    common = f"横轴为提供负载（请求/秒，取 {loads}）；{len(sweep['tiers'])} 条线是档位 {names}；"
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


def _points(sweep: dict) -> list[dict]:
    out = []
    for p in sweep["points"]:
        out.append(
            {
                "tier": p.tier,
                "load": p.cell.load if p.cell else None,
                "goodput": _pm(p.cell.figures["goodput"]) if p.cell else None,
                "cost": p.cost,
                "open": [
                    c.load
                    for c in sweep["cells"]
                    if c.tier == p.tier.name and c.outcome == "not yet known"
                ],
            }
        )
    return out


def _loops(loops: dict, measure) -> dict:
    """Closed vs open loop over the replications: intervals and per-replication comparisons."""
    closed, opened = loops["closed"], loops["open"]
    conf = loops["protocol"].confidence
    out = {"n": len(closed), "rate": loops["rate"], "tier": loops["tier"], "confidence": conf}
    for name, rows in (("closed", closed), ("open", opened)):
        out[name] = {}
        for p in ("p50", "p90", "p99"):
            values = [r[p] for r in rows]
            out[name][p] = measure.interval(values, conf) if None not in values else None
            out[name][f"served_{p}"] = measure.interval([r[f"served_{p}"] for r in rows], conf)
        out[name]["infinite_p99"] = sum(r["p99"] is None for r in rows)
        out[name]["rate"] = measure.interval([r["rate"] for r in rows], conf)
        out[name]["failed"] = sum(r["failed"] for r in rows)
        out[name]["steady"] = sum(
            r["steady"] for r in rows
        )  # the protocol's check, per replication
    pairs = list(zip(closed, opened, strict=True))
    steady_pairs = [(c, o) for c, o in pairs if c["steady"] and o["steady"]]
    out["steady_pairs"] = len(steady_pairs)

    def higher(a, b) -> bool:  # b above a, None counting as infinitely late
        return (math.inf if b is None else b) > (math.inf if a is None else a)

    for p in ("p50", "p90", "p99"):
        out[f"open_above_{p}"] = sum(higher(c[p], o[p]) for c, o in pairs)
        out[f"steady_open_above_{p}"] = sum(higher(c[p], o[p]) for c, o in steady_pairs)
    ratios = [o["p99"] / c["p99"] for c, o in pairs if o["p99"] and c["p99"]]
    out["ratio"] = (min(ratios), max(ratios)) if ratios else None
    return out


def loops_figure(loops: dict, slo_ttft_ms: float) -> str:
    groups = ["p50", "p90", "p99"]
    series, errors = [], []
    for name, word in (("closed", "闭环"), ("open", "开环")):
        figures = [loops[name][f"served_{g}"] for g in groups]
        series.append((word, [f.mean / 1000 for f in figures]))
        errors.append([(f.low / 1000, f.high / 1000) for f in figures])
    desc = (
        f"同一平均到达率（约 {_n(loops['rate'])} 请求/秒）下，"
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


def _facts(sweep: dict) -> dict:
    """Claims about small-paged's curve, checked in each replication (k of n)."""
    cells = [c for c in sweep["cells"] if c.tier == "small-paged"]
    n = len(cells[0].replications)
    peaks, falls = set(), 0
    for i in range(n):
        goodput = [(c.load, c.replications[i]["goodput"]["goodput_per_s"]) for c in cells]
        peak = max(goodput, key=lambda g: g[1])
        peaks.add(peak[0])
        falls += goodput[-1][1] < peak[1]
    top = cells[-1]
    top_ok = sum(
        1
        for r in top.replications
        if r["goodput"]["submitted"] > r["goodput"]["succeeded"]
        and 2 * r["goodput"]["qualifying"] < r["goodput"]["succeeded"]
    )
    failed = [r["goodput"]["submitted"] - r["goodput"]["succeeded"] for r in top.replications]
    submitted = [r["goodput"]["submitted"] for r in top.replications]
    return {
        "sp_falls": {"k": falls, "n": n, "peaks": [_n(x) for x in sorted(peaks)]},
        "sp_top": {
            "k": top_ok,
            "n": n,
            "load": top.load,
            "failed": sum(failed) / n,
            "submitted": sum(submitted) / n,
        },
    }


def _misled(short: dict, sweep: dict) -> list[dict]:
    """Cells where the single short run said feasible and the protocol does not; ``quality``
    when the protocol's quality interval lies wholly below the quality target."""
    protocol = sweep["protocol"]
    by_cell = {(c.tier, c.load): c for c in sweep["cells"]}
    out = []
    for row in short["rows"]:
        cell = by_cell[row["tier"], row["load"]]
        if row["attainment"] < protocol.attainment_target or cell.outcome == "feasible":
            continue
        quality = cell.figures["quality"]
        low_quality = (
            protocol.quality_target is not None
            and quality is not None
            and quality.high < protocol.quality_target
        )
        out.append({"short": row, "cell": _rows([cell])[0], "quality": low_quality})
    return out


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


def _cheapest_options(points: list[dict], protocol, best: str | None) -> list[tuple]:
    options = []
    for o in points:
        tier = o["tier"]
        if o["cost"]:
            why = (
                f"在 {_n(o['load'])} 请求/s 上可行，每 1,000 个合格请求 {o['cost'].mean:.4f} 美元。"
            )
        else:
            why = "在任何负载上都不可行"
            q = protocol.quality_target
            if q is not None and tier.quality_pass_rate < q:
                why += f"：质量通过率 {tier.quality_pass_rate:.0%} 低于 {q:.0%} 的目标"
            why += "。"
        text = f"{tier.name}（${_n(tier.price_per_hour)}/时，质量 {tier.quality_pass_rate:.0%}）"
        options.append((tier.name == best, text, why))
    return options


def vllm_knobs() -> dict:
    """The knob table (``vllm/knobs.yaml``) and the vLLM version its names are checked against."""
    import yaml

    here = Path(__file__).parent / "vllm"
    doc = yaml.safe_load((here / "knobs.yaml").read_text(encoding="utf-8"))
    version = (here / "engine_args.txt").read_text(encoding="utf-8").split()[2]
    return {"knobs": doc["knobs"], "version": version}


def lesson_context(unit: Unit) -> dict:
    runs = lesson_runs.Runs(unit)
    pair = lesson_runs.batching(runs)
    kv = lesson_runs.kv_pool(runs)
    lifo = lesson_runs.lifo_victim(runs)
    sweep = lesson_runs.sweep(unit)
    short = lesson_runs.short(unit, sweep)
    measure = lesson_runs.solution_measure(unit)
    loop_runs = lesson_runs.loops(unit)
    loops = _loops(loop_runs, measure)
    figures = sweep_figures(sweep)
    points = _points(sweep)
    best = sweep["choice"].best
    short["misled"] = _misled(short, sweep)
    timed = lesson_runs.timed_vs_budgeted(runs)
    buckets = lesson_runs.buckets(unit)
    return {
        "buckets": buckets,
        "buckets_svg": Markup(buckets_figure(buckets)),
        "dev": lesson_runs.device(unit).to_json(),
        "batching": pair,
        "batching_svg": Markup(batching_figure(pair)),
        "kv": kv,
        "kv_draws": _kv_draws(kv),
        "kv_svg": Markup(kv_figure(kv)),
        "lifo": lifo,
        "sweep": sweep,
        "protocol": sweep["protocol"],
        "sweep_rows": _rows(sweep["cells"]),
        "ops": points,
        "cheapest_options": _cheapest_options(
            points, sweep["protocol"], best.tier.name if best else None
        ),
        "facts": _facts(sweep),
        "loops_protocol": loop_runs["protocol"],
        "choice": sweep["choice"],
        "short": short,
        "book": lesson_runs.chapter_example(measure),
        "goodput_svg": Markup(figures["goodput"]),
        "attainment_svg": Markup(figures["attainment"]),
        "p99_svg": Markup(figures["p99"]),
        "loops": loops,
        "loops_svg": Markup(loops_figure(loops, loop_runs["protocol"].slo_ttft_ms)),
        "timed": timed,
        "single": lesson_steadiness.single_runs(measure, sweep["protocol"], kv, timed),
        "calibrated": lesson_calibrated.calibrated(unit, lesson_runs, sweep),
        "vllm": vllm_knobs(),
        "timed_svg": Markup(timed_figure(timed)),
        "settings": {
            "pool": lesson_runs.POOL,
            "loops": lesson_runs.LOOPS,
            "protocol_file": lesson_runs.PROTOCOL,
            "short": lesson_runs.SHORT,
            "burst_seeds": lesson_runs.BURST_SEEDS,
            "k": lesson_runs.BATCH_K,
        },
    }
