#!/usr/bin/env python3
"""A class of unit 08 graded with per-student variants against the same class without.

    python benchmarks/variants_class.py [--count 200] [--repeat 3] [--jobs N]
        [--case ID ...] [--secret FILE]

Makes ``--count`` submissions named ``s001``, ``s002``, ... (the reference and the mutant
corpus in turn, so correct and wrong schedules are both graded), then:

1. makes each student's variant (``grader.variants``: hidden traces and golden files from the
   reference), ``--jobs`` at a time as ``release student`` leaves them in the cache, each
   timed: the issue's bound is 30 s for one variant;
2. grades the class ``--repeat`` times each way, alternating, with the batch path of ``infralab
   grade --out`` (``--jobs`` workers, default the batch's own): once on the fixed set, once
   with ``--variants-by-name`` (each submission on its student's variant, made in step 1);
3. prints the median wall time of each way and their ratio (the issue's bound: at most 2),
   with the machine's load average before and after.

The variants go to ``$INFRALAB_VARIANT_CACHE`` when it is set, else to a temp folder removed at
the end. ``--secret`` defaults to a throwaway secret (the timing does not depend on it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.grading import cohort  # noqa: E402
from grader.traces.mutants import list_mutants  # noqa: E402
from grader.units import load_unit  # noqa: E402
from grader.variants import identity, keys, store  # noqa: E402


def make_class(unit, root: Path, count: int) -> list[Path]:
    """``count`` submission folders: the reference, then each mutant, in turn."""
    reference = {name: (unit.solutions_dir / name).read_bytes() for name in unit.editable}
    kinds = [reference] + [m.submission(unit).files for m in list_mutants(unit)]
    folders = []
    for n in range(count):
        folder = root / f"s{n + 1:03d}"
        folder.mkdir(parents=True)
        for name, data in kinds[n % len(kinds)].items():
            (folder / name).write_bytes(data)
        folders.append(folder)
    return folders


def _make_one(name: str, secret: bytes) -> float:
    began = time.perf_counter()
    identity.variant_for(load_unit("unit08"), name, secret)
    return time.perf_counter() - began


def make_variants(names: list[str], secret: bytes, jobs: int | None) -> list[float]:
    """Each student's variant made (or found in the cache), ``jobs`` at a time (the cache's
    folders are written atomically, so workers cannot clash); the seconds each took."""
    with ProcessPoolExecutor(jobs or os.cpu_count()) as pool:
        return list(pool.map(_make_one, names, [secret] * len(names)))


def grade(unit, folders, out: Path, jobs, cases, variant_of) -> float:
    began = time.perf_counter()
    result = cohort.grade_batch(
        unit, folders, out, jobs=jobs, force=True, cases=cases, progress=False,
        variant_of=variant_of,
    )  # fmt: skip
    seconds = time.perf_counter() - began
    if result.failed or len(result.graded) != len(folders):
        raise SystemExit(f"grading failed: {result.failed or 'not every submission graded'}")
    return seconds


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200, help="submissions in the class")
    parser.add_argument("--repeat", type=int, default=3, help="gradings of each kind")
    parser.add_argument("--jobs", type=int, help="batch workers (default: the batch's own)")
    parser.add_argument("--case", action="append", help="grade only this case (repeatable)")
    parser.add_argument("--secret", help="variant secret file (default: a throwaway one)")
    args = parser.parse_args(argv)
    unit = load_unit("unit08")
    work = Path(tempfile.mkdtemp(prefix="infralab-variants-class-"))
    if not os.environ.get(store.CACHE_ENV):
        os.environ[store.CACHE_ENV] = str(work / "variants")
    secret = keys.load_secret(args.secret) if args.secret else os.urandom(32).hex().encode()
    try:
        folders = make_class(unit, work / "class", args.count)
        print(f"load average before: {_load()}", flush=True)
        began = time.perf_counter()
        took = make_variants([f.name for f in folders], secret, args.jobs)
        print(
            f"variants: {len(took)} made in {time.perf_counter() - began:.1f} s, median "
            f"{statistics.median(took):.1f} s, slowest {max(took):.1f} s each (bound: 30 s)",
            flush=True,
        )
        fixed, varied = [], []

        def variant_of(name):
            return identity.variant_for(unit, name, secret)

        for n in range(args.repeat):
            fixed.append(grade(unit, folders, work / "fixed", args.jobs, args.case, None))
            varied.append(grade(unit, folders, work / "varied", args.jobs, args.case, variant_of))
            print(
                f"repeat {n + 1}: fixed {fixed[-1]:.1f} s, variants {varied[-1]:.1f} s "
                f"(load average {_load()})",
                flush=True,
            )
        a, b = statistics.median(fixed), statistics.median(varied)
        print(
            f"{args.count} submissions, median of {args.repeat}: fixed {a:.1f} s, variants "
            f"{b:.1f} s, ratio {b / a:.2f} (bound: 2)"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
