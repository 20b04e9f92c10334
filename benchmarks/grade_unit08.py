#!/usr/bin/env python3
"""Unit 08 grading throughput: N submissions, every case, the real sandbox, ``--jobs 2``.

    python benchmarks/grade_unit08.py [--count 12] [--jobs 2] [--repeat 3] [--mutant NAME]

Half the submissions are the reference solution, half a buggy one (a mutant of the corpus,
``--mutant``, default ``budgeted_one_chunk``: wrong on the budgeted cases only). Each repeat
grades all of them twice with ``infralab grade``'s batch path, in the same conditions: once as
grading was (``verdict_memo`` off: every run file judged; children write full run files) and
once as it is (compact run files, ``case_runs.RUN_FORMAT``; the batch's remembered verdicts,
``verdict_memo``: the reference's run files judged once per batch). It
prints submissions per minute for both (median of the repeats), the CPU time per submission
(exact where a cgroup can be made, see ``grade_throughput.py``) and the load average, and exits
1 unless every submission got the same report (score and every case's status) both ways.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from grade_throughput import cpu_clock  # noqa: E402

from grader.grading import case_runs, cohort, verdict_memo  # noqa: E402
from grader.traces.mutants import list_mutants  # noqa: E402
from grader.units import load_unit  # noqa: E402

MODES = {
    "before (full run files, every one judged)": False,
    "after (compact run files, remembered verdicts)": True,
}
FORMAT = case_runs.RUN_FORMAT  # what graded children are asked for now; before: no --format


def make_submissions(unit, root: Path, count: int, mutant: str) -> list[Path]:
    buggy = next((m for m in list_mutants(unit) if m.name == mutant), None)
    if buggy is None:
        raise SystemExit(f"no mutant named {mutant!r} in {unit.mutants_dir}")
    reference = {n: (unit.solutions_dir / n).read_bytes() for n in unit.editable}
    out = []
    for n in range(count):
        files = reference if n % 2 == 0 else buggy.submission(unit).files
        folder = root / f"{n:03d}-{'reference' if n % 2 == 0 else mutant}"
        folder.mkdir(parents=True)
        for name, data in files.items():
            (folder / name).write_bytes(data)
        out.append(folder)
    return out


def outcomes(out: Path, subs: list[Path]) -> dict[str, tuple]:
    """Each submission's score and case statuses, from its staff report."""
    found = {}
    for path in subs:
        name = cohort.submission_name(path)
        doc = json.loads((out / cohort.STAFF / f"{name}.json").read_text(encoding="utf-8"))
        found[name] = (doc["score"], tuple((c["id"], c["status"]) for c in doc["cases"]))
    return found


def one_repeat(unit, subs, out: Path, jobs: int, remember: bool, cpu_seconds) -> dict:
    verdict_memo.ENABLED = remember
    case_runs.RUN_FORMAT = FORMAT if remember else []  # read by graded_argv; workers fork after
    started, cpu = time.monotonic(), cpu_seconds()
    result = cohort.grade_batch(unit, subs, out, jobs=jobs, force=True, progress=False)
    wall = time.monotonic() - started
    if result.failed:
        raise SystemExit(f"grading failed: {result.failed}")
    return {
        "per_min": len(subs) / wall * 60,
        "wall_s": wall,
        "cpu_s": (cpu_seconds() - cpu) / len(subs),
        "outcomes": outcomes(out, subs),
    }


def class_args(parser: argparse.ArgumentParser, argv, count: int) -> argparse.Namespace:
    """The flags of a graded class (``--count``, ``--jobs``, ``--repeat``, ``--mutant``),
    parsed and checked."""
    parser.add_argument("--count", type=int, default=count)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--mutant", default="budgeted_one_chunk")
    args = parser.parse_args(argv)
    if args.count < 2 or args.repeat < 1 or args.jobs < 1:
        parser.error("--count must be at least 2, --repeat and --jobs at least 1")
    return args


def start_clock(args, each: str = "") -> tuple:
    """(CPU clock, its unit's name) after printing what is graded and the conditions."""
    clock, exact = cpu_clock()
    print(
        f"unit08: {args.count} submissions{each} (half the reference, half {args.mutant}), "
        f"--jobs {args.jobs}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
    )
    return clock, "CPU s" if exact else "host CPU s (upper bound: a shared host counts other work)"


def main(argv=None) -> int:
    args = class_args(argparse.ArgumentParser(description=__doc__.splitlines()[0]), argv, 12)
    unit = load_unit("unit08")
    clock, kind = start_clock(args)
    work = Path(tempfile.mkdtemp(prefix="infralab-bench08-"))
    rows: dict[str, list[dict]] = {mode: [] for mode in MODES}
    try:
        subs = make_submissions(unit, work / "subs", args.count, args.mutant)
        for n in range(args.repeat):
            for mode, remember in MODES.items():  # both ways in every repeat: same conditions
                row = one_repeat(unit, subs, work / "out", args.jobs, remember, clock)
                rows[mode].append(row)
                print(
                    f"run {n + 1} {mode}: {row['per_min']:.1f} submissions/min "
                    f"(wall {row['wall_s']:.1f} s), {row['cpu_s']:.2f} {kind} per submission, "
                    f"load average {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    finally:
        verdict_memo.ENABLED, case_runs.RUN_FORMAT = True, FORMAT
        shutil.rmtree(work, ignore_errors=True)
    medians = {m: statistics.median(r["per_min"] for r in rows[m]) for m in MODES}
    for mode in MODES:
        cpu = statistics.median(r["cpu_s"] for r in rows[mode])
        print(
            f"median of {args.repeat}, {mode}: {medians[mode]:.1f} submissions/min, "
            f"{cpu:.2f} {kind} per submission"
        )
    before, after = (medians[m] for m in MODES)
    print(f"after / before: {after / before:.2f}x")
    first = rows[next(iter(MODES))][0]["outcomes"]
    same = all(r["outcomes"] == first for mode in MODES for r in rows[mode])
    scores = sorted({score for score, _ in first.values()})
    print(f"scores {scores}: {'the same' if same else 'DIFFERENT'} in every run, both ways")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
