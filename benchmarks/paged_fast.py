#!/usr/bin/env python3
"""Benchmark: the staff fast path of unit 08's ``paged`` beside the lab engine, in one run.

The job: the first ``--requests`` (5,000) rows of the Azure conversation trace (CC-BY 4.0,
Azure/AzurePublicDataset; Patel et al., "Splitwise", ISCA 2024), ``paged`` (vLLM V1's
scheduler) with a 512-token budget and 128 active sequences on the affine A30/7B device, and a
tight page pool: by default the largest request's pages (the smallest pool that rejects nobody),
so that requests are preempted and recomputed throughout. Two whole processes run it, round
after round (``--repeat``, medians printed):

- ``infralab (fast path)``: ``infralab simulate --unit unit08 --reference --policy paged
  --budget 512 --trace T --device-profile P --format F --engine fast --output RUN.json``;
- ``infralab --engine lab``: the same command on the lab engine (``--lab-folder``: the lab
  folder's ``simulate.py``, standard library only, with the reference ``policies.py`` copied
  in, same flags).

Both write the run file in ``--format`` (compact by default, or full: every token time and
batch); the benchmark requires the two files to be byte for byte the same (every token time,
step, chunk and preemption). Then the loops alone, measured in this
process: ``fastpath.reference_run`` (executor, compact run entry, summary) against
``servesim.simulate``. Figures depend on the machine and its load: quote them with both.

    .venv/bin/python benchmarks/paged_fast.py [--requests 5000] [--pages M] [--repeat 3] \
        [--format full] [--lab-folder]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from azure_trace import import_azure  # noqa: E402
from vidur_job import DEFAULT_CSV, PROFILE, lab_copy, timed_child  # noqa: E402

BUDGET = 512


def tightest_pool(doc: dict, page_tokens: int = 16) -> int:
    """The largest request's pages: the smallest pool with which nobody is rejected."""
    return max(-(-(r["inputTokens"] + r["outputTokens"]) // page_tokens) for r in doc["requests"])


LAB = "infralab --engine lab"


def whole_processes(folder: Path, trace: Path, profile: Path, args) -> dict:
    """Median wall seconds and peak RSS of each command; the run files it wrote."""
    repeat = args.repeat
    flags = ["--policy", "paged", "--budget", str(BUDGET), "--trace", str(trace)]
    flags += ["--device-profile", str(profile), "--format", args.format]
    infralab = [sys.executable, "-m", "grader.cli", "simulate", "--unit", "unit08", "--reference"]
    outputs = {name: folder / f"{name}.json" for name in ("fast", "lab")}
    lab = [*infralab, *flags, "--engine", "lab", "--output", str(outputs["lab"])], ROOT
    if args.lab_folder:
        lab = [sys.executable, "simulate.py", *flags, "--output", str(outputs["lab"])]
        lab = lab, lab_copy(folder)
    commands = {
        "infralab (fast path)": (
            [*infralab, *flags, "--engine", "fast", "--output", str(outputs["fast"])],
            ROOT,
        ),
        LAB: lab,
    }
    timed_child(*commands["infralab (fast path)"])  # warm-up: bytecode caches, the file cache
    results = {name: [] for name in commands}
    for _ in range(repeat):  # rounds, so that a change in machine load hits every row
        for name, runs in results.items():
            wall, rss, _ = timed_child(*commands[name])
            runs.append((wall, rss))
            load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
            print(f"  {name}: {wall:.2f} s, {rss:.0f} MiB (load {load})", flush=True)
    return {"results": results, "outputs": outputs}


def loops(doc: dict, device_doc: dict, repeat: int) -> dict:
    """Median loop seconds of the fast path and of the lab engine, measured in this process."""
    import servesim

    from grader import fastpath, reference
    from grader.units import load_unit

    unit = load_unit("unit08")
    trace = servesim.parse_trace(doc)
    device = servesim.DeviceProfile.from_json(device_doc)
    policy = reference.solution_policies(unit).paged

    def fast():
        run = fastpath.reference_run(
            unit, "paged", {"budget": BUDGET}, trace, device, "compact", True
        )
        if run is None:
            sys.exit("error: the fast path declined the job")

    def lab():
        servesim.simulate(trace, lambda view: policy(view, BUDGET), device, budget=BUDGET)

    out = {}
    for name, loop in (("fast", fast), ("lab", lab)):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            loop()
            times.append(time.perf_counter() - start)
        out[name] = statistics.median(times)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=DEFAULT_CSV, help="Azure conversation CSV")
    parser.add_argument("--requests", type=int, default=5000, help="trace prefix")
    parser.add_argument("--pages", type=int, help="KV pages M (default: the tightest pool)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--format", choices=("compact", "full"), default="compact")
    parser.add_argument(
        "--no-loops", dest="loops", action="store_false", help="whole processes only"
    )
    parser.add_argument(
        "--lab-folder", action="store_true", help="the lab side is the lab folder's simulate.py"
    )
    args = parser.parse_args()
    if not args.csv.is_file():
        print(f"error: trace CSV not found: {args.csv} (pass --csv)", file=sys.stderr)
        return 2
    doc = import_azure(args.csv, requests=args.requests)
    device = PROFILE | {"kvPages": args.pages or tightest_pool(doc), "pageTokens": 16}
    with tempfile.TemporaryDirectory(prefix="paged-fast-") as tmp:
        folder = Path(tmp)
        trace, profile = folder / "trace.json", folder / "profile.json"
        trace.write_text(json.dumps(doc), encoding="utf-8")
        profile.write_text(json.dumps(device), encoding="utf-8")
        print(
            f"job: {len(doc['requests'])} requests, paged B={BUDGET}, K={device['maxActive']}, "
            f"M={device['kvPages']} pages of 16 tokens; {os.cpu_count()} CPUs"
        )
        done = whole_processes(folder, trace, profile, args)
        fast_file, lab_file = (done["outputs"][k].read_bytes() for k in ("fast", "lab"))
        run = json.loads(lab_file)["runs"][0]
        steps = len(run["events"]) if "events" in run else len(run["stepEndMs"])
        loop = loops(doc, device, args.repeat) if args.loops else None

    figures = run["summary"]
    print(
        f"\nrun ({args.format}): {steps:,} steps, "
        f"{figures['recomputes']:,} preemptions, {figures['recomputedTokens']:,} recomputed "
        f"tokens, {figures['rejected']} rejected"
    )
    walls = {k: statistics.median(r[0] for r in v) for k, v in done["results"].items()}
    rss = {k: statistics.median(r[1] for r in v) for k, v in done["results"].items()}
    inner = {"infralab (fast path)": "fast", LAB: "lab"}
    base = walls[LAB]
    print(f"\n{'':22}{'whole process':>15}{'loop':>10}{'peak RSS':>11}{'speed-up':>10}")
    for name, wall in walls.items():
        text = f"{loop[inner[name]]:9.2f}s" if loop else f"{'-':>10}"
        print(f"{name:22}{wall:14.2f}s{text}{rss[name]:7.0f} MiB{base / wall:9.1f}x")
    print(f"(medians of {args.repeat} rounds)")
    if loop:
        print(
            f"loop speed-up {loop['lab'] / loop['fast']:.1f}x: fastpath.reference_run (compact) "
            "against servesim.simulate, in this process"
        )
    same = fast_file == lab_file
    verdict = "byte for byte the same" if same else "DIFFERENT"
    print(f"\nexact: the two run files ({len(lab_file):,} bytes) are {verdict}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
