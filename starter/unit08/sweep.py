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
import unicodedata
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


OUTCOMES = {"feasible": "可行", "infeasible": "不可行", "not yet known": "尚不能确定"}


def to_decide(cell) -> str:
    """The 还需 column: what would turn a not-yet-known verdict into a decided one."""
    v = cell.verdict
    if v.outcome != "not yet known":
        return ""
    if v.longer_runs:
        return "更长的运行"
    if v.replications_needed is None:
        return "超过 1000 次"
    more = v.replications_needed - len(cell.replications)
    return f"共 {v.replications_needed} 次（再 {more} 次）"


LEGEND = (
    "说明：goodput/s、两种达成率（分母为提交数 / 成功数）、p99 TTFT 和质量通过率都是“均值±置信区间"
    "半宽”；稳态 = 通过稳态检查的重复次数 / 重复次数；\n"
    "还需 = 结论尚不能确定时，按目前的均值和标准差估计一共要几次重复（几个种子）才能判定，"
    "括号里是比现在多几次；“更长的运行”：运行还没稳定，多做重复也没用，要加长每次运行。"
)


def _width(text: str) -> int:
    """Columns ``text`` takes in a terminal (a Chinese character takes two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _cell(text: str, width: int, right: bool = False) -> str:
    fill = " " * max(0, width - _width(text))
    return fill + text if right else text + fill


def table(protocol, cells) -> str:
    """The sweep's table, one row per (tier, load), in the handout's language, and its legend."""
    columns = (
        ("档位", 15, False),
        ("用户数" if protocol.closed else "请求/s", 6, True),
        ("结论", 10, False),
        ("goodput/s", 11, True),
        ("达成率/提交 %", 13, True),
        ("达成率/成功 %", 13, True),
        ("p99 TTFT ms", 13, True),
        ("质量 %", 10, True),
        ("稳态", 6, True),
        ("还需", 18, True),
    )

    def row(values) -> str:
        return " ".join(
            _cell(str(v), w, right) for v, (_, w, right) in zip(values, columns, strict=True)
        ).rstrip()

    head = row(name for name, _, _ in columns)
    lines = [head, "-" * _width(head)]
    for c in cells:
        f = c.figures
        lines.append(
            row(
                (
                    c.tier,
                    f"{c.load:g}",
                    OUTCOMES.get(c.outcome, c.outcome),
                    plus_minus(f["goodput"]),
                    plus_minus(f["attainment"], 100, 1),
                    plus_minus(f["attainment_succeeded"], 100, 1),
                    plus_minus(f["p99_ttft_ms"], 1, 0),
                    plus_minus(f["quality"], 100, 1),
                    f"{c.steady}/{len(c.replications)}",
                    to_decide(c),
                )
            )
        )
    return "\n".join([*lines, LEGEND])


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

    terminal = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if terminal:  # a log or a pipe gets no carriage returns
            print(f"\r已完成 {done}/{total} 次运行", end="", file=sys.stderr, flush=True)

    try:
        results = experiment.run_protocol(protocol, paths, code, args.jobs, progress)
        if terminal:
            print(file=sys.stderr)
        cells = experiment.judge(protocol, results, measure)
    except NotImplementedError as exc:
        print(f"\nsweep.py: error: {unfinished(exc, lab)}", file=sys.stderr)
        return EXIT_NOT_IMPLEMENTED
    points = experiment.operating_points(tiers, cells)
    choice = experiment.cheapest(tiers, cells, points)
    print(describe(protocol))
    if narrowed:
        print("注意：用 --requests/--replications/--loads 缩小了范围，这不是协议的答案")
    print(table(protocol, cells))
    print(summary(points, choice))
    if args.json:
        write_atomic(
            Path(args.json), json.dumps({"protocol": protocol.to_json(), "results": results})
        )
        print(f"wrote {args.json}")
    out = free_folder(Path(args.out))
    if out != Path(args.out):
        print(f"{args.out} 里已有上次画的图，这次写到 {out}（不覆盖；--out 可以指定别的文件夹）")
    write_plots(out, protocol, tiers, cells)
    return 0


CHARTS = ("goodput.svg", "attainment.svg", "p99-ttft.svg")


def free_folder(out: Path) -> Path:
    """``out``, or ``out-2``, ``out-3``, ... : the first that holds none of the charts, so an
    earlier sweep's charts are never overwritten."""
    candidate, number = out, 1
    while any((candidate / name).exists() for name in CHARTS):
        number += 1
        candidate = out.with_name(f"{out.name}-{number}")
    return candidate


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
            limit=(target * 100, f"目标 {target:.0%}"), bar_note=note, y_max=100,
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
