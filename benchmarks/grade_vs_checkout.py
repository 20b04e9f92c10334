#!/usr/bin/env python3
"""Unit 08 batch grading against an earlier checkout, both as a TA runs it, in the same run.

    python benchmarks/grade_vs_checkout.py --baseline DIR [--count 24] [--jobs 2] [--repeat 3]

``DIR`` is a checkout of an earlier commit (``git worktree add DIR COMMIT``) whose packages
import with this interpreter. Each side grades a class made from its own course: half its
reference solution, half the mutant ``--mutant`` of its own corpus (the policies' signatures
may differ between the commits, so one side's files need not run on the other). Each round
runs both sides one after the other, as whole processes:

    python -m grader.cli grade --unit unit08 --jobs J --out OUT --force SUBMISSION...

It prints submissions per minute (medians of the rounds), CPU seconds per submission (exact
where a cgroup can be made: sandboxed children included, see ``grade_throughput.py``), the
ratio, and each side's scores: the reference's and the mutant's, and the points the mutant
loses. It exits 1 unless every round gave each side the same scores, the reference full marks
and the mutant the same loss on both sides.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from grade_unit08 import class_args, start_clock  # noqa: E402

MAKE_CLASS = """
import sys
from pathlib import Path
from grader.traces.mutants import list_mutants
from grader.units import load_unit
unit, out, count, name = load_unit("unit08"), Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
buggy = next((m for m in list_mutants(unit) if m.name == name), None)
if buggy is None:
    raise SystemExit(f"no mutant named {name!r} in this checkout")
files = {
    "reference": {n: (unit.solutions_dir / n).read_bytes() for n in unit.editable},
    "mutant": buggy.submission(unit).files,
}
for n in range(count):
    kind = "reference" if n % 2 == 0 else "mutant"
    folder = out / f"{n:03d}-{kind}"
    folder.mkdir(parents=True)
    for file, data in files[kind].items():
        (folder / file).write_bytes(data)
"""


def side_env(checkout: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(checkout), "PYTHONDONTWRITEBYTECODE": "1"}


def make_class(checkout: Path, out: Path, count: int, mutant: str) -> list[Path]:
    cmd = [sys.executable, "-c", MAKE_CLASS, str(out), str(count), mutant]
    subprocess.run(cmd, cwd=checkout, env=side_env(checkout), check=True)
    return sorted(out.iterdir())


def grade_once(checkout: Path, subs: list[Path], out: Path, jobs: int, clock) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "grader.cli", "grade", "--unit", "unit08", "--jobs", str(jobs)]
    cmd += ["--out", str(out), "--force", *map(str, subs)]
    started, cpu = time.monotonic(), clock()
    done = subprocess.run(cmd, cwd=checkout, env=side_env(checkout), capture_output=True)
    wall, cpu = time.monotonic() - started, clock() - cpu
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: grading failed:\n{done.stderr.decode()[-2000:]}")
    with open(out / "scores.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    scores = {}
    for row in rows:
        kind = row["submission"].split("-", 1)[1]
        scores.setdefault(kind, set()).add((float(row["score"]), float(row["max_score"])))
    return {"per_min": len(subs) / wall * 60, "cpu_s": cpu / len(subs), "scores": scores}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="an earlier checkout")
    args = class_args(parser, argv, 24)
    if not (args.baseline / "grader" / "units.py").is_file():
        parser.error(f"--baseline {args.baseline}: not a checkout of this project")
    sides = {"baseline": args.baseline.resolve(), "this checkout": ROOT}
    clock, kind = start_clock(args, " a side")
    work = Path(tempfile.mkdtemp(prefix="infralab-grade-vs-"))
    rows: dict[str, list[dict]] = {side: [] for side in sides}
    try:
        classes = {
            side: make_class(path, work / side.replace(" ", "-"), args.count, args.mutant)
            for side, path in sides.items()
        }
        for n in range(args.repeat):
            for side, path in sides.items():
                row = grade_once(path, classes[side], work / "out", args.jobs, clock)
                rows[side].append(row)
                print(
                    f"round {n + 1} {side}: {row['per_min']:.1f} submissions/min, "
                    f"{row['cpu_s']:.2f} {kind} per submission, "
                    f"load average {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    medians = {}
    for side in sides:
        medians[side] = statistics.median(r["per_min"] for r in rows[side])
        cpu = statistics.median(r["cpu_s"] for r in rows[side])
        print(
            f"median of {args.repeat}, {side}: {medians[side]:.1f} submissions/min, "
            f"{cpu:.2f} {kind} per submission"
        )
    print(f"this checkout / baseline: {medians['this checkout'] / medians['baseline']:.2f}x")
    return 0 if _same_scores(rows) else 1


def _same_scores(rows: dict[str, list[dict]]) -> bool:
    """Print each side's scores; True when they hold in every round, the reference has full
    marks and the mutant loses the same points on both sides."""
    losses, ok = set(), True
    for side, runs in rows.items():
        first = runs[0]["scores"]
        ok &= all(r["scores"] == first for r in runs)
        ref, mutant = first.get("reference", set()), first.get("mutant", set())
        if len(ref) != 1 or len(mutant) != 1:
            print(f"{side}: submissions of one kind got different scores: {first}")
            return False
        (ref_score, ref_max), (mut_score, _) = next(iter(ref)), next(iter(mutant))
        ok &= ref_score == ref_max
        losses.add(round(ref_max - mut_score, 6))
        print(
            f"{side}: reference {ref_score:g}/{ref_max:g}, {len(runs)} rounds alike; "
            f"the mutant {mut_score:g} (loses {ref_max - mut_score:g})"
        )
    ok &= len(losses) == 1
    print("scores: " + ("the same loss on both sides" if ok else "DIFFERENT"))
    return ok


if __name__ == "__main__":
    sys.exit(main())
