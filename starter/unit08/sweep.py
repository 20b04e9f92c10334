#!/usr/bin/env python3
"""Sweep tiers x offered loads and find the cheapest feasible tier (given; handout deliverable (c)).

For every tier file and every offered load (open loop, Poisson, sizes drawn from --trace) it
simulates the tier's policy, then measures with YOUR measure.py: goodput over the run, SLO
attainment over submitted requests (rejected and cancelled ones count as misses) and over
succeeded ones, and the p99 TTFT with every request that never got a first token counted as
infinitely late. A tier is feasible at a load when attainment over submitted >= --target. Its
operating point is the highest feasible load; the cost of 1,000 qualifying requests there is
pricePerHour / (goodput per hour) x 1,000. The cheapest operating point wins.

    python3 sweep.py --trace azure-conv-slice --tiers tiers/*.json --loads 1,2,3,4,5,6
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import measure
import policies
from plots import line_chart
from servesim import simulate
from servesim.labconfig import load_lab
from servesim.load import open_loop
from servesim.metrics import percentile
from servesim.runfile import build_run, write_atomic
from servesim.stubs import run_main
from servesim.tiers import Tier, TierError, load_tier
from servesim.trace import TraceError, read_trace_file, resolve_trace

EXIT_BAD_INPUT = 2


@dataclass(frozen=True)
class Point:
    """One tier at one offered load."""

    tier: str
    load: float
    goodput: measure.Goodput
    rejected: int
    cancelled: int
    p99_ttft_ms: float  # math.inf when more than 1 % never got a first token


def run_tier(lab, tier: Tier, trace):
    """The extended run entry of ``tier``'s policy on ``trace``."""
    spec = lab.policy(tier.policy)
    params = {name: meta["default"] for name, meta in spec.params.items()}
    if "budget" in params and tier.budget is not None:
        params["budget"] = tier.budget
    function = getattr(policies, spec.function)
    timeline = simulate(
        trace,
        lambda view: function(view, **params),
        tier.device,
        budget=tier.budget if "budget" in params else None,
        queue_cap=tier.queue_cap,
        admit=getattr(policies, spec.admit) if spec.admit else None,
    )
    return build_run(tier.policy, params, tier.device, timeline, None, extended=True)


def measure_point(tier: Tier, load: float, run: dict, slo) -> Point:
    requests = run["requests"]
    end = math.nextafter(max(r["statusMs"] for r in requests), math.inf)

    def passes(request):
        return measure.quality_passes(request["id"], tier.name, tier.quality_pass_rate)

    report = measure.goodput(requests, slo, 0.0, end, passes=passes)
    ttfts = [r["ttftMs"] if r["ttftMs"] is not None else math.inf for r in requests]
    return Point(
        tier=tier.name,
        load=load,
        goodput=report,
        rejected=sum(r["status"] == measure.REJECTED for r in requests),
        cancelled=sum(r["status"] == measure.CANCELLED for r in requests),
        p99_ttft_ms=percentile(ttfts, 99),
    )


def operating_point(points: list[Point], target: float) -> Point | None:
    """The highest offered load whose attainment over submitted reaches ``target``."""
    feasible = [p for p in points if p.goodput.attainment_over_submitted >= target]
    return max(feasible, key=lambda p: p.load, default=None)


def cost_per_1000(tier: Tier, point: Point) -> float:
    per_hour = point.goodput.goodput_per_s * 3600
    return math.inf if per_hour == 0 else tier.price_per_hour / per_hour * 1000


def table(points: list[Point]) -> str:
    head = (
        f"{'tier':16} {'load/s':>7} {'subm':>5} {'rej':>4} {'canc':>4} {'succ':>5} "
        f"{'qual':>5} {'goodput/s':>9} {'att/subm':>8} {'att/succ':>8} {'p99 TTFT ms':>11}"
    )
    lines = [head, "-" * len(head)]
    for p in points:
        g = p.goodput
        succ = "-" if g.attainment_over_succeeded is None else f"{g.attainment_over_succeeded:.1%}"
        p99 = "inf" if math.isinf(p.p99_ttft_ms) else f"{p.p99_ttft_ms:.0f}"
        lines.append(
            f"{p.tier:16} {p.load:7g} {g.submitted:5d} {p.rejected:4d} {p.cancelled:4d} "
            f"{g.succeeded:5d} {g.qualifying:5d} {g.goodput_per_s:9.2f} "
            f"{g.attainment_over_submitted:8.1%} {succ:>8} {p99:>11}"
        )
    return "\n".join(lines)


def choose(tiers: list[Tier], points: list[Point], target: float) -> tuple[str, Tier | None]:
    """The per-tier summary lines and the cheapest feasible tier (None when none is)."""
    lines, best, best_cost = [], None, math.inf
    for tier in tiers:
        point = operating_point([p for p in points if p.tier == tier.name], target)
        if point is None:
            lines.append(f"{tier.name:16} infeasible at every offered load")
            continue
        cost = cost_per_1000(tier, point)
        lines.append(
            f"{tier.name:16} up to {point.load:g} req/s: goodput "
            f"{point.goodput.goodput_per_s:.2f} req/s, ${cost:.4f} per 1,000 qualifying"
        )
        if cost < best_cost:
            best, best_cost = tier, cost
    return "\n".join(lines), best


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="sweep.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", default="azure-conv-slice", help="where request sizes come from")
    parser.add_argument("--tiers", nargs="+", required=True, help="tier files (tiers/*.json)")
    parser.add_argument("--loads", default="1,2,3,4,5,6", help="offered loads, req/s, comma list")
    parser.add_argument("--requests", type=int, default=300, help="requests per run")
    parser.add_argument("--seed", type=int, default=1, help="seed of the arrival schedule")
    parser.add_argument("--slo-ttft-ms", type=float, default=2000.0)
    parser.add_argument("--slo-tpot-ms", type=float, default=80.0)
    parser.add_argument("--target", type=float, default=0.9, help="attainment over submitted")
    parser.add_argument("--out", default="runs/sweep", help="folder for the SVG plots")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    lab = load_lab()
    try:
        loads = [float(x) for x in args.loads.split(",")]
        if not loads or any(not math.isfinite(x) or x <= 0 for x in loads):
            raise ValueError
    except ValueError:
        print(f"sweep.py: error: --loads must be numbers > 0, got {args.loads!r}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.requests < 1 or not 0 < args.target <= 1:
        print("sweep.py: error: --requests must be >= 1 and --target in (0, 1]", file=sys.stderr)
        return EXIT_BAD_INPUT
    names = tuple(p.name for p in lab.policies)
    try:
        base = read_trace_file(resolve_trace(args.trace, lab.traces_dir))
        tiers = [load_tier(path, names) for path in args.tiers]
    except (TraceError, TierError) as exc:
        print(f"sweep.py: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    slo = measure.Slo(ttft_ms=args.slo_ttft_ms, tpot_ms=args.slo_tpot_ms)
    points = []
    for tier in tiers:
        for load in loads:
            trace = open_loop(base, load, args.requests, args.seed)
            points.append(measure_point(tier, load, run_tier(lab, tier, trace), slo))
    print(
        f"SLO: TTFT <= {args.slo_ttft_ms:g} ms, TPOT <= {args.slo_tpot_ms:g} ms; target "
        f"{args.target:.0%} of submitted; {args.requests} requests per run, seed {args.seed}"
    )
    print(table(points))
    summary, best = choose(tiers, points, args.target)
    print(summary)
    print(f"cheapest feasible tier: {best.name if best else 'none'}")
    write_plots(Path(args.out), tiers, points, args.slo_ttft_ms)
    return 0


def write_plots(out: Path, tiers: list[Tier], points: list[Point], slo_ttft_ms: float) -> None:
    """The two charts of the sweep, labelled as the lesson page labels its own (Chinese, seconds),
    the p99 TTFT chart with the SLO's TTFT target as a dashed line."""

    def series(value):
        return {t.name: [(p.load, value(p)) for p in points if p.tier == t.name] for t in tiers}

    charts = {
        "goodput.svg": line_chart(
            series(lambda p: p.goodput.goodput_per_s),
            "goodput 随提供负载变化，每个档位一条线",
            "提供负载 (请求/s)",
            "goodput (合格请求/s)",
        ),
        "p99-ttft.svg": line_chart(
            series(lambda p: p.p99_ttft_ms / 1000),
            "p99 TTFT 随提供负载变化，每个档位一条线",
            "提供负载 (请求/s)",
            "p99 TTFT (s)",
            hline=(slo_ttft_ms / 1000, f"TTFT 目标 {slo_ttft_ms / 1000:g} s"),
        ),
    }
    for name, text in charts.items():
        write_atomic(out / name, text)
        print(f"wrote {out / name}")


if __name__ == "__main__":
    sys.exit(run_main("sweep.py", main))
