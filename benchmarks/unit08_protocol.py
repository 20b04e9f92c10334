#!/usr/bin/env python3
"""Unit 08's experimental protocol: how fast it runs and how often its verdicts are wrong.

    python benchmarks/unit08_protocol.py sweep   [--repeat 3] [--jobs 2]
    python benchmarks/unit08_protocol.py site    [--repeat 3]
    python benchmarks/unit08_protocol.py engine  [--tier small-paged] [--load 1.5]
    python benchmarks/unit08_protocol.py verdicts [--long 20000] [--runs 2] [--sets 4]
                                                   [--jobs 2] [--store FILE]

``sweep``: the lesson's full protocol (``protocols/lesson.json``: 4 tiers x 6 loads x 5
replications x 2,000 requests) run by ``python3 -S sweep.py`` in a copy of the lab folder that
holds the reference solution (standard library only), with ``--jobs`` worker processes; wall
time per repeat and the median. ``site``: ``infralab site build`` into a temp folder (the lesson
cache fresh); median wall time. ``engine``: where one replication's time goes (cProfile, grouped
by file). ``verdicts``: for every (tier, load) cell of the lesson's protocol, a long-run
attainment from ``--runs`` runs of ``--long`` requests each (seeds 1001, 1002, ...; the same
window rule), then the protocol's verdicts from ``--sets`` independent seed sets (the lesson's
own seeds first) and the share of cells whose verdict is wrong: feasible where the long run is
below the target, or infeasible where it is above. It also names the cheapest feasible tier the
long runs give, beside the protocol's. Long runs take long (many CPU-minutes); ``--store`` keeps
them in a JSON file, and a rerun with the same file only adds what is missing.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import math
import pstats
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from servesim.protocol import load_protocol  # noqa: E402

from grader import labfolder  # noqa: E402
from grader.plugins import load_file  # noqa: E402
from grader.units import load_unit  # noqa: E402

UNIT = load_unit("unit08")
lesson_jobs = load_file(UNIT.unit_dir / "lesson_jobs.py")  # settings, code, jobs
lesson_cache = load_file(UNIT.unit_dir / "lesson_cache.py")
protocol_runs = load_file(UNIT.unit_dir / "lesson_protocol_runs.py")
PROTOCOL = UNIT.lab_dir / lesson_jobs.PROTOCOL


def solved_lab(folder: Path) -> Path:
    lab = labfolder.assemble(UNIT, folder / "unit08")
    for name in UNIT.editable:
        shutil.copyfile(UNIT.solutions_dir / name, lab / name)
    return lab


def bench_sweep(args) -> None:
    walls, cpus = [], []
    with tempfile.TemporaryDirectory(prefix="u08-sweep-") as tmp:
        lab = solved_lab(Path(tmp))
        for n in range(args.repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-S", "sweep.py", "--protocol", "protocols/lesson.json",
                 "--jobs", str(args.jobs), "--out", "runs/sweep"],
                cwd=lab, capture_output=True, text=True, check=False,
            )  # fmt: skip
            walls.append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            if done.returncode != 0:
                sys.exit(f"sweep.py failed: {done.stderr}")
            choice = re.search(r"^cheapest feasible tier: .*$", done.stdout, re.M).group(0)
            print(f"repeat {n + 1}: {walls[-1]:.1f} s wall, {cpus[-1]:.1f} s CPU ({choice})")
    protocol = load_protocol(PROTOCOL)
    runs = 4 * len(protocol.loads) * len(protocol.seeds)
    print(
        f"lesson protocol sweep, {runs} runs of {protocol.requests_per_run} requests, "
        f"--jobs {args.jobs}: median {statistics.median(walls):.1f} s wall, "
        f"{statistics.median(cpus):.1f} s CPU (all processes; / {args.jobs} = "
        f"{statistics.median(cpus) / args.jobs:.1f} s on {args.jobs} idle cores) over "
        f"{len(walls)} repeats"
    )


def bench_site(args) -> None:
    stale = lesson_cache.stale_sections(UNIT)
    if stale:
        print(f"note: lesson cache stale for {stale}: the build makes those runs")
    walls = []
    for n in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="u08-site-") as tmp:
            started = time.perf_counter()
            done = subprocess.run(
                [str(Path(sys.executable).with_name("infralab")), "site", "build", "--out", tmp],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            walls.append(time.perf_counter() - started)
            if done.returncode != 0:
                sys.exit(f"site build failed: {done.stderr}")
            print(f"repeat {n + 1}: {walls[-1]:.1f} s", flush=True)
    print(f"infralab site build: median {statistics.median(walls):.1f} s over {len(walls)} repeats")


def bench_engine(args) -> None:
    ex, code = lesson_jobs.experiment(UNIT), lesson_jobs.code(UNIT)
    protocol = load_protocol(PROTOCOL)
    tier = UNIT.lab_dir / "tiers" / f"{args.tier}.json"
    job = ex.Job(code, protocol.to_json(), str(tier), args.load, protocol.seeds[0])
    profile = cProfile.Profile()
    started = time.process_time()
    profile.runcall(ex.simulate_job, job)
    total = time.process_time() - started
    by_file: dict[str, float] = defaultdict(float)
    for (filename, _, _), (_, _, own, _, _) in pstats.Stats(profile).stats.items():
        by_file[Path(filename).name if filename.startswith("/") else filename] += own
    print(f"{args.tier} at {args.load:g} req/s, {protocol.requests_per_run} requests: "
          f"{total:.2f} s CPU (profiled); own time by file:")  # fmt: skip
    for name, own in sorted(by_file.items(), key=lambda kv: -kv[1])[:12]:
        print(f"  {name:28} {own:6.2f} s  {100 * own / max(sum(by_file.values()), 1e-9):5.1f} %")


def long_job(job) -> dict:
    """One long run's qualifying and submitted counts over the protocol's window."""
    ex = lesson_jobs.experiment_of(job)
    figures = ex.run_job(job)["replication"]["goodput"]
    return {"tier": Path(job.tier_path).stem, "load": job.load, "seed": job.seed, **figures}


def bench_verdicts(args) -> None:
    ex, code, measure = (
        lesson_jobs.experiment(UNIT),
        lesson_jobs.code(UNIT),
        lesson_jobs.solution_measure(UNIT),
    )
    protocol = load_protocol(PROTOCOL)
    tiers = protocol_runs.tiers(UNIT)
    paths = [str(p) for p in lesson_jobs.tier_paths(UNIT)]
    store = Path(args.store) if args.store else None
    kept = json.loads(store.read_text()) if store and store.exists() else {"long": []}
    # long runs: the same protocol, each run --long requests (warm-up and cool-down scaled)
    scale = args.long / protocol.requests_per_run
    long_doc = protocol.to_json() | {
        "requestsPerRun": args.long,
        "warmupRequests": round(protocol.warmup_requests * scale),
        "cooldownRequests": round(protocol.cooldown_requests * scale),
        "seeds": [1001 + k for k in range(max(args.runs, 2))],
    }
    from servesim.protocol import parse_protocol

    long_protocol = parse_protocol(long_doc, "long runs")
    have = {(r["tier"], r["load"], r["seed"]) for r in kept["long"] if r["requests"] == args.long}
    jobs = [
        j
        for j in ex.jobs_of(long_protocol, paths, code)
        if j.seed < 1001 + args.runs and (Path(j.tier_path).stem, j.load, j.seed) not in have
    ]
    if jobs:
        print(f"{len(jobs)} long runs of {args.long} requests ...", flush=True)
        started = time.perf_counter()
        for row in ex.run_jobs(jobs, args.jobs, _progress, long_job):
            kept["long"].append({**row, "requests": args.long})
            if store:
                store.write_text(json.dumps(kept))
        print(f"long runs took {time.perf_counter() - started:.0f} s", flush=True)
    truth: dict[tuple, float] = {}
    for tier in tiers:
        for load in protocol.loads:
            rows = [
                r for r in kept["long"]
                if r["tier"] == tier.name and r["load"] == load and r["requests"] == args.long
                and r["seed"] < 1001 + args.runs
            ]  # fmt: skip
            truth[tier.name, load] = sum(r["qualifying"] for r in rows) / sum(
                r["submitted"] for r in rows
            )
    # the protocol's verdicts, from independent seed sets
    wrong = cells = 0
    choices = []
    for k in range(args.sets):
        seeds = [s + 100 * k for s in protocol.seeds]
        trial = parse_protocol(protocol.to_json() | {"seeds": seeds}, f"seed set {k + 1}")
        results = (
            lesson_cache.cached(UNIT, "sweep")
            if k == 0
            else kept.get(f"set{k}") or ex.run_protocol(trial, paths, code, args.jobs, _progress)
        )
        if k and store:
            kept[f"set{k}"] = results
            store.write_text(json.dumps(kept))
        judged = ex.judge(trial, results, measure)
        points = ex.operating_points(tiers, judged)
        choices.append(ex.cheapest(tiers, judged, points).text())
        for cell in judged:
            true = truth[cell.tier, cell.load]
            target = protocol.attainment_target
            bad = (cell.outcome == "feasible" and true < target) or (
                cell.outcome == "infeasible" and true > target
            )
            cells += 1
            wrong += bad
            flag = "  WRONG" if bad else ""
            print(f"set {k + 1} {cell.tier:15} {cell.load:5g} {cell.outcome:14} "
                  f"long-run {true:.4f}{flag}")  # fmt: skip
    print(f"wrong verdicts: {wrong} of {cells} cells ({100 * wrong / cells:.1f} %)")
    for k, text in enumerate(choices):
        print(f"cheapest feasible tier, seed set {k + 1}: {text}")
    best, best_cost = None, math.inf
    for tier in tiers:
        ok = [
            load for load in protocol.loads if truth[tier.name, load] >= protocol.attainment_target
        ]
        if not ok:
            print(f"long runs: {tier.name} feasible at no load")
            continue
        load = max(ok)
        rows = [r for r in kept["long"] if r["tier"] == tier.name and r["load"] == load]
        goodput = statistics.fmean(r["goodput_per_s"] for r in rows)
        cost = tier.price_per_hour / (goodput * 3600) * 1000
        print(f"long runs: {tier.name} up to {load:g} req/s, ${cost:.4f} per 1,000")
        if cost < best_cost:
            best, best_cost = tier.name, cost
    print(f"cheapest feasible tier by the long runs: {best}")


def _progress(done: int, total: int) -> None:
    print(f"\r{done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("sweep", "site", "engine", "verdicts"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--tier", default="small-paged")
    parser.add_argument("--load", type=float, default=1.5)
    parser.add_argument("--long", type=int, default=20_000, help="requests per long run")
    parser.add_argument("--runs", type=int, default=2, help="long runs per cell")
    parser.add_argument("--sets", type=int, default=4, help="independent seed sets")
    parser.add_argument("--store", help="JSON file keeping long runs between invocations")
    args = parser.parse_args(argv)
    {"sweep": bench_sweep, "site": bench_site, "engine": bench_engine,
     "verdicts": bench_verdicts}[args.what](args)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
