"""Unit 08's lesson text context: the values and tables the page's sentences quote, each made
from the runs (``lesson_runs.py`` lists them): the sweep's rows and operating points, how often
a claim holds over draws or replications, closed vs open loop compared, the cells where the
short run misled, and why each tier is or is not the cheapest.

A claim about protocol runs is checked in every replication, or the page states it as "in k of
n replications" or with its interval.
"""

from __future__ import annotations

import math

VERDICT_ZH = {"feasible": "可行", "infeasible": "不可行", "not yet known": "尚不能确定"}


def number(value: float, digits: int = 2) -> str:
    text = f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return text or "0"


def kv_draws(kv: dict) -> dict:
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


def sweep_rows(cells) -> list[dict]:
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


def operating_points(sweep: dict) -> list[dict]:
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


def loops_compared(loops: dict, measure) -> dict:
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


def facts(sweep: dict) -> dict:
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
    succeeded = [r["goodput"]["succeeded"] for r in top.replications]
    # the loads at which no request of any replication met the SLO (goodput 0 in every one)
    zero = [c.load for c in cells if all(r["goodput"]["qualifying"] == 0 for r in c.replications)]
    return {
        "sp_falls": {"k": falls, "n": n, "peaks": [number(x) for x in sorted(peaks)]},
        "sp_top": {
            "k": top_ok,
            "n": n,
            "load": top.load,
            "failed": sum(failed) / n,
            "submitted": sum(submitted) / n,
            "succeeded": sum(succeeded) / n,
            "qualifying": sum(r["goodput"]["qualifying"] for r in top.replications),
        },
        "sp_zero": [number(x) for x in zero],
    }


def misled(short: dict, sweep: dict) -> list[dict]:
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
        out.append({"short": row, "cell": sweep_rows([cell])[0], "quality": low_quality})
    return out


def cheapest_options(points: list[dict], protocol, best: str | None) -> list[tuple]:
    options = []
    for o in points:
        tier = o["tier"]
        if o["cost"]:
            cost = f"每 1,000 个合格请求 {o['cost'].mean:.4f} 美元"
            why = f"在 {number(o['load'])} 请求/s 上可行，{cost}。"
        else:
            why = "在任何负载上都不可行"
            q = protocol.quality_target
            if q is not None and tier.quality_pass_rate < q:
                why += f"：质量通过率 {tier.quality_pass_rate:.0%} 低于 {q:.0%} 的目标"
            why += "。"
        text = (
            f"{tier.name}（${number(tier.price_per_hour)}/时，质量 {tier.quality_pass_rate:.0%}）"
        )
        options.append((tier.name == best, text, why))
    return options
