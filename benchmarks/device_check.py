#!/usr/bin/env python3
"""The one prepared device check of the real-device runner: every unit, under five minutes.

Unit 09's run has no client cancels or output streams: a replay keeps the virtual run's
decisions, which only then hold on the measured clock too (``realdevice.runner``).

1. Calibrates a device profile (``run_gpu.py --calibrate``'s grid; affine and context-aware
   fits) and prints its held-out error, overall and per term.
2. Decode throughput of the model at a few batch sizes and contexts against the roofline of
   the device's memory bandwidth (``realdevice.roofline``), and prefill throughput.
3. In each unit, runs the reference policies on lesson traces with the unit's device fields
   (unit 08: KV pages, page size, budget) and the calibrated costs: a replay whose run file the
   grader verifies with measured timing, and a live run set against the calibrated simulation
   (real vs simulated TTFT and ITL).

``--quick`` (the default without CUDA, and what CI runs) uses the tiny model, the quick grid and
the smallest lesson traces; on a GPU the full check uses the ``small`` model, the ``cuda`` grid
and larger lesson traces. A time budget (``--budget-s``) stops the trace runs cleanly (the
report says which were cut). Exit 0 when every run verified, 1 otherwise, 2 on bad input.

    bash benchmarks/device_check.sh [--quick] [--output runs/device-check.json]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
from realdevice import calibrate, calibration, fit, report, roofline, runsetup  # noqa: E402
from realdevice.backend import TimeBudgetExceeded  # noqa: E402
from realdevice.cli import build_run_parser  # noqa: E402
from realdevice.runner import run_replay  # noqa: E402
from servesim.labconfig import load_lab  # noqa: E402
from servesim.runfile import dumps, write_atomic  # noqa: E402

from grader import reference  # noqa: E402
from grader.units import load_unit  # noqa: E402
from grader.verify import verify_run  # noqa: E402

# (unit, run_gpu.py flags) per lesson run; the full check adds the second list
KV64 = ["--device-profile", "kv-64-pages", "--budget", "64"]
QUICK_RUNS = (
    ("unit07", ["--trace", "mixed", "--chunk", "2"]),
    ("unit08", ["--trace", "lifo-victim", *KV64, "--policy", "paged"]),
    ("unit08", ["--trace", "lifo-victim", *KV64, "--policy", "budgeted"]),
    # unit 09: the real cache follows the engine's prefix-cache pages (hits, evictions)
    ("unit09", ["--trace", "shared-prefix", "--policy", "prefix_paged"]),
)
FULL_RUNS = (
    ("unit07", ["--trace", "unseen", "--chunk", "4"]),
    ("unit08", ["--trace", "burst", "--device-profile", "pool-256", "--policy", "paged"]),
    ("unit08", ["--trace", "kv-pages", "--device-profile", "kv-64-pages", "--policy", "paged"]),
)
DECODE_POINTS = {"quick": ((1, 64), (8, 64)), "full": ((1, 1024), (32, 1024), (128, 1024))}
PREFILL_POINTS = {"quick": (64,), "full": (512, 2048)}


def parse_args(argv=None):
    cuda = torch.cuda.is_available()
    parser = argparse.ArgumentParser(prog="device_check.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="CPU/CI mode (default without CUDA)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if cuda else "cpu")
    parser.add_argument(
        "--model",
        help="a preset or a Hugging Face checkpoint folder (run_gpu.py --model); default: tiny "
        "with --quick, small otherwise",
    )
    parser.add_argument("--budget-s", type=float, default=240.0, help="stop trace runs after this")
    parser.add_argument("--output", type=Path, default=Path("runs") / "device-check.json")
    args = parser.parse_args(argv)
    args.quick = args.quick or args.device == "cpu"
    args.model = args.model or ("tiny" if args.quick else "small")
    if args.budget_s <= 0:
        parser.error("--budget-s must be > 0")
    return args


def lesson_setup(unit_id: str, flags: list[str], args):
    """The unit's lab, its run_gpu.py flags parsed, and the run they ask for (reference
    policies); a device profile named without a path is one of the lab's ``devices/``."""
    unit = load_unit(unit_id)
    lab = load_lab(unit.lab_dir)
    flags = list(flags)
    if "--device-profile" in flags:
        at = flags.index("--device-profile") + 1
        flags[at] = str(unit.lab_dir / "devices" / f"{flags[at]}.json")
    real_flags = ["--device", args.device, "--model", args.model]
    parsed = build_run_parser(lab).parse_args([*flags, *real_flags])
    setup = runsetup.resolve(lab, parsed, reference.solution_policies(unit))
    return unit, parsed, setup


def with_costs(profile, calibrated):
    """``profile`` (the unit's K, M, pages) with the calibrated cost coefficients."""
    return replace(profile, **{name: getattr(calibrated, name) for name in fit.COEFFICIENTS})


def check_unit(unit_id, flags, args, calibrated, deadline) -> dict:
    _unit, parsed, setup = lesson_setup(unit_id, flags, args)
    setup = replace(setup, profile=with_costs(setup.profile, calibrated))
    real = runsetup.real_device(parsed, setup, calibrating=False)
    real.deadline = deadline
    entry = {"unit": unit_id, "flags": flags, "runs": []}
    for spec in setup.policies:
        try:
            run, trace = run_replay(setup.trace, spec, setup.profile, real)
            problems = verify_run(run, trace, run["device"], timing="measured")
            live = report.compare(trace, spec, setup.profile, real)
        except TimeBudgetExceeded:
            entry["runs"].append({"policy": spec.name, "truncated": True})
            continue
        entry["runs"].append(
            {
                "policy": spec.name,
                "params": spec.params,
                "truncated": False,
                "verified": not problems,
                "problems": [str(p) for p in problems[:3]],
                "preemptions": sum(len(e.get("preempt", ())) for e in run["events"]),
                "maxKvPagesHeld": max(e["kvPagesHeld"] for e in run["events"]),
                "kvPages": real.cache.pool.capacity,
                "submissions": len(run["events"]),
                **{
                    k: live[k] for k in ("ttft", "itl", "residualError", "sameScheduleAsSimulation")
                },
            }
        )
    return entry


def main(argv=None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1 if args.device == "cpu" else torch.get_num_threads())
    started = time.monotonic()
    mode = "quick" if args.quick else "full"
    grid = calibrate.GRIDS["quick" if args.quick else args.device]
    _, parsed, setup = lesson_setup("unit08", list(QUICK_RUNS[1][1]), args)
    points = DECODE_POINTS[mode]
    need = max(calibrate.Shape(b, c).pages(16, 5) for b, c in points)
    pool = replace(setup.profile, kv_pages=max(grid.pages_needed(16), need))
    real = runsetup.real_device(parsed, replace(setup, profile=pool), calibrating=False)
    desc = real.describe()
    print(
        f"device check ({mode}): {desc['backend']} ({desc['deviceName']}), model {args.model} "
        f"({real.config.parameters / 1e6:.2f} M parameters, {desc['dtype']}), torch {desc['torch']}"
    )
    result = calibration.run(real, grid, setup.profile)
    print(f"calibration ({time.monotonic() - started:.1f} s):")
    print(result.render(desc, per_step=False))

    band = roofline.bandwidth(real)
    print(f"decode throughput vs the memory roofline ({band.gbps:,.0f} GB/s, {band.source}):")
    decode = []
    for sequences, context in points:
        point = roofline.decode_point(real, sequences, context, band)
        decode.append(point)
        print(
            f"  {sequences:4d} sequences at {context:5d} positions: step {point.step_ms:8.3f} ms, "
            f"{point.tokens_per_s:12,.0f} tok/s vs roofline {point.roofline_tokens_per_s:14,.0f} "
            f"tok/s ({100 * point.fraction:.2f}%)"
        )

    prefill = [roofline.prefill_point(real, n) for n in PREFILL_POINTS[mode]]
    print("prefill throughput (one prompt, one chunk):")
    for point in prefill:
        print(
            f"  {point.tokens:5d} tokens: step {point.step_ms:8.3f} ms, "
            f"{point.tokens_per_s:12,.0f} tok/s"
        )

    deadline = started + args.budget_s
    units = [
        check_unit(unit_id, flags, args, result.profile, deadline)
        for unit_id, flags in (QUICK_RUNS if args.quick else QUICK_RUNS + FULL_RUNS)
    ]
    print("real vs calibrated simulation (live runs), replays verified with measured timing:")
    failed = False
    for entry in units:
        print(f"  {entry['unit']} {' '.join(entry['flags'])}:")
        for r in entry["runs"]:
            if r["truncated"]:
                print(f"    {r['policy']}: not run (--budget-s spent)")
                continue
            failed |= not r["verified"]
            verdict = "verified" if r["verified"] else f"NOT VERIFIED: {r['problems']}"
            print(
                f"    {r['policy']}: {r['submissions']} submissions, {r['preemptions']} "
                f"preemptions, at most {r['maxKvPagesHeld']} of {r['kvPages']} KV pages; {verdict}"
            )
            for metric in ("ttft", "itl"):
                m = r[metric]
                if m:
                    print(
                        f"      {metric.upper():4} real {m['realMeanMs']:.3f} ms, simulated "
                        f"{m['simMeanMs']:.3f} ms, per-value |error| {m['meanAbsErrorPct']:.1f}%"
                    )
    document = {
        "mode": mode,
        "realDevice": desc,
        "profile": result.profile.to_json(),
        "calibration": result.document(real, grid)["calibration"]["summary"]
        | {"perTerm": result.held["perTerm"]},
        "bandwidth": {"gbps": band.gbps, "source": band.source},
        "decode": [point.to_json() for point in decode],
        "prefill": [point.to_json() for point in prefill],
        "units": units,
        "totalS": time.monotonic() - started,
    }
    write_atomic(args.output, dumps(document))
    print(f"total {document['totalS']:.1f} s; wrote {args.output}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
