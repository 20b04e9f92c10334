#!/usr/bin/env python3
"""Run a protocol over tiers x offered loads and find the cheapest feasible tier (given).

    python3 sweep.py --protocol protocols/lesson.json [--tiers tiers/*.json] [--jobs N]

The protocol file fixes the experiment: where request sizes come from, the arrival process,
the loads, requests per run, warm-up and cool-down (the measurement window), SLOs, targets,
replications (seeds) and the confidence level. Every tier runs at every load once per seed;
YOUR measure.py measures each run over the window (``measure.replication``), then each
(tier, load) gets a confidence interval per figure across its replications (``measure.interval``)
and a verdict: feasible, infeasible or not yet known (``measure.verdict``). A tier's operating
point is its highest feasible load; the cost of 1,000 qualifying requests there is
pricePerHour / (goodput per hour) x 1,000. The cheapest feasible tier is chosen among the
feasible ones only, and reported as not yet known while another tier could still be cheaper.

``--requests``, ``--replications`` and ``--loads`` narrow the protocol for a quick look; the
output then says it is not the protocol's answer.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import experiment
from plots import line_chart
from servesim.labconfig import load_lab
from servesim.protocol import ProtocolError, load_protocol
from servesim.runfile import write_atomic
from servesim.stubs import run_main, unfinished
from servesim.tiers import TierError, load_tier
from servesim.trace import TraceError, read_trace_file, resolve_trace

EXIT_BAD_INPUT = 2
EXIT_NOT_IMPLEMENTED = 1
HERE = Path(__file__).resolve().parent


def plus_minus(figure, scale: float = 1.0, digits: int = 2, unit: str = "") -> str:
    """``mean ± half-width`` of an interval (``inf`` when a replication had no value)."""
    if figure is None:
        return "inf"
    half = (figure.high - figure.low) / 2
    return f"{figure.mean * scale:.{digits}f}±{half * scale:.{digits}f}{unit}"


def to_decide(cell) -> str:
    v = cell.verdict
    if v.outcome != "not yet known":
        return ""
    if v.longer_runs:
        return "longer runs"
    if v.replications_needed is None:
        return ">1000 reps"
    return f"{v.replications_needed} reps"


def table(protocol, cells) -> str:
    head = (
        f"{'tier':15} {protocol.load_unit:>6} {'verdict':13} {'goodput/s':>11} "
        f"{'att/subm %':>10} {'att/succ %':>10} {'p99 TTFT ms':>13} {'quality %':>10} "
        f"{'steady':>6} {'to decide':>11}"
    )
    lines = [head, "-" * len(head)]
    for c in cells:
        f = c.figures
        lines.append(
            f"{c.tier:15} {c.load:6g} {c.outcome:13} {plus_minus(f['goodput']):>11} "
            f"{plus_minus(f['attainment'], 100, 1):>10} "
            f"{plus_minus(f['attainment_succeeded'], 100, 1):>10} "
            f"{plus_minus(f['p99_ttft_ms'], 1, 0):>13} {plus_minus(f['quality'], 100, 1):>10} "
            f"{c.steady}/{len(c.replications):<4} {to_decide(c):>11}"
        )
    return "\n".join(lines)


def describe(protocol) -> str:
    a = protocol.arrivals
    if a.process == "closed":
        how = f"closed loop, {a.think} think time of {a.think_ms:g} ms; loads are users"
    elif a.process == "bursty":
        b = a.burst
        how = (
            f"open loop, bursty ({b.factor:g}x the mean rate for {b.fraction:.0%} of every "
            f"{b.period_ms:g} ms)"
        )
    else:
        how = "open loop, Poisson arrivals"
    slo = ", ".join(
        f"{name} <= {value:g} ms"
        for name, value in (("TTFT", protocol.slo_ttft_ms), ("TPOT", protocol.slo_tpot_ms))
        if value is not None
    )
    targets = f"attainment over submitted >= {protocol.attainment_target:.0%}"
    if protocol.quality_target is not None:
        targets += f", quality pass rate >= {protocol.quality_target:.0%}"
    return "\n".join(
        [
            f"protocol {protocol.name}: {how}; sizes from {protocol.sizes}",
            f"{protocol.requests_per_run} requests per run; window by arrival after "
            f"{protocol.warmup_requests} warm-up and before {protocol.cooldown_requests} "
            f"cool-down requests; {len(protocol.seeds)} replications (seeds "
            f"{', '.join(map(str, protocol.seeds))}); {protocol.confidence:.0%} intervals "
            "(Student t across replications)",
            f"SLO: {slo or 'none'}; targets: {targets}",
        ]
    )


def summary(points, choice) -> str:
    lines = []
    for p in points:
        if p.cell is None:
            lines.append(f"{p.tier.name:15} no feasible load")
            continue
        g = p.cell.figures["goodput"]
        lines.append(
            f"{p.tier.name:15} up to {p.cell.load:g}: goodput {plus_minus(g)} req/s, "
            f"${p.cost.mean:.4f} per 1,000 qualifying ({p.cost.low:.4f}-{p.cost.high:.4f})"
        )
    lines.append(f"cheapest feasible tier: {choice.text()}")
    return "\n".join(lines)


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="sweep.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--protocol", required=True, help="protocol file (protocols/*.json)")
    parser.add_argument("--tiers", nargs="+", help="tier files (default: tiers/*.json)")
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: all)"
    )
    parser.add_argument("--requests", type=int, help="narrow: requests per run")
    parser.add_argument("--replications", type=int, help="narrow: the first N seeds only")
    parser.add_argument("--loads", help="narrow: these loads only (comma list)")
    parser.add_argument("--out", default="runs/sweep", help="folder for the SVG plots")
    parser.add_argument("--json", help="also write every replication's figures here (JSON)")
    return parser.parse_args(argv)


def load_inputs(args, lab):
    """(protocol, tier paths, tiers), or raise ProtocolError / TierError / TraceError."""
    protocol = load_protocol(args.protocol)
    narrowing = {}
    if args.requests is not None:
        narrowing["requests"] = args.requests
    if args.replications is not None:
        narrowing["replications"] = args.replications
    if args.loads:
        try:
            narrowing["loads"] = [float(x) for x in args.loads.split(",")]
        except ValueError:
            raise ProtocolError(
                f"--loads must be a comma list of numbers, got {args.loads!r}"
            ) from None
    if narrowing:
        protocol = protocol.narrowed(**narrowing)
    read_trace_file(resolve_trace(protocol.sizes, lab.traces_dir))  # fail early, with its name
    paths = args.tiers or sorted(str(p) for p in (HERE / "tiers").glob("*.json"))
    names = tuple(p.name for p in lab.policies)
    tiers = [load_tier(path, names) for path in paths]
    return protocol, paths, tiers, bool(narrowing)


def main(argv=None) -> int:
    args = parse_args(argv)
    lab = load_lab()
    if args.jobs < 1:
        print("sweep.py: error: --jobs must be >= 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        protocol, paths, tiers, narrowed = load_inputs(args, lab)
    except (ProtocolError, TierError, TraceError) as exc:
        print(f"sweep.py: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    code = experiment.Code.of_lab(HERE)
    measure = experiment.module(*code.measure)

    def progress(done: int, total: int) -> None:
        print(f"\rran {done}/{total} replications", end="", file=sys.stderr, flush=True)

    try:
        results = experiment.run_protocol(protocol, paths, code, args.jobs, progress)
        print(file=sys.stderr)
        cells = experiment.judge(protocol, results, measure)
    except NotImplementedError as exc:
        print(f"\nsweep.py: error: {unfinished(exc, lab)}", file=sys.stderr)
        return EXIT_NOT_IMPLEMENTED
    points = experiment.operating_points(tiers, cells)
    choice = experiment.cheapest(tiers, cells, points)
    print(describe(protocol))
    if narrowed:
        print("NOTE: narrowed with --requests/--replications/--loads: not the protocol's answer")
    print(table(protocol, cells))
    print(summary(points, choice))
    if args.json:
        write_atomic(
            Path(args.json), json.dumps({"protocol": protocol.to_json(), "results": results})
        )
        print(f"wrote {args.json}")
    write_plots(Path(args.out), protocol, tiers, cells)
    return 0


def write_plots(out: Path, protocol, tiers, cells) -> None:
    """The sweep's three charts, labelled as the lesson page labels its own (Chinese, TTFT in
    seconds), with the attainment target and the TTFT SLO as dashed lines."""

    def series(name, scale=1.0):
        def point(c):
            f = c.figures[name]
            if f is None:
                return (c.load, math.inf)
            return (c.load, f.mean * scale, f.low * scale, f.high * scale)

        return {t.name: [point(c) for c in cells if c.tier == t.name] for t in tiers}

    x_label = "提供负载 (用户数)" if protocol.closed else "提供负载 (请求/s)"
    note = f"误差线：{protocol.confidence:.0%} 置信区间"
    ttft = protocol.slo_ttft_ms
    target = protocol.attainment_target
    charts = {
        "goodput.svg": line_chart(
            series("goodput"), "goodput 随提供负载变化，每个档位一条线", x_label,
            "goodput (合格请求/s)", bar_note=note,
        ),
        "attainment.svg": line_chart(
            series("attainment", 100), "SLO 达成率（以提交数为分母）", x_label, "达成率 (%)",
            limit=(target * 100, f"目标 {target:.0%}"), bar_note=note,
        ),
        "p99-ttft.svg": line_chart(
            series("p99_ttft_ms", 1 / 1000), "p99 TTFT 随提供负载变化，每个档位一条线",
            x_label, "p99 TTFT (s)",
            limit=(ttft / 1000, f"TTFT 目标 {ttft / 1000:g} s") if ttft is not None else None,
            bar_note=note,
        ),
    }  # fmt: skip
    for name, text in charts.items():
        write_atomic(out / name, text)
        print(f"wrote {out / name}")


if __name__ == "__main__":
    sys.exit(run_main("sweep.py", main))
