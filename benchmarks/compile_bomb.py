#!/usr/bin/env python3
"""Grading time of a compile bomb against the honest reference's, with the real sandbox.

    python benchmarks/compile_bomb.py [--repeat 3] [--size 1048576] [--cases all|policy]

Grades unit 08's reference and the reference whose ``measure.py`` also carries a never-called
function returning an f-string of ``--size`` bytes (compiling it is quadratic: minutes of CPU
for 1 MiB), each ``--repeat`` times with the unit's limits, and prints the wall time of each
(median), their ratio and the scores. Issue 31 asks that grading a submission take at most a
few times the reference's wall time whatever its files contain; the compile budget
(``Limits.compile_s`` CPU seconds per file and sandboxed child) is what bounds it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.grading.grade import grade_submission  # noqa: E402
from grader.grading.limits import limits_for  # noqa: E402
from grader.grading.submission import Submission  # noqa: E402
from grader.units import load_unit  # noqa: E402


def bomb(size: int) -> bytes:
    return b'\n\ndef _never_called():\n    return f"' + b"{0}" * (size // 3) + b'"\n'


def timed(unit, files: dict[str, bytes], cases, repeat: int) -> tuple[float, float, float]:
    """(median wall seconds, score, max score) over ``repeat`` gradings."""
    walls, report = [], None
    for _ in range(repeat):
        started = time.monotonic()
        report = grade_submission(unit, Submission(files), cases=cases, limits=limits_for(unit))
        walls.append(time.monotonic() - started)
    return statistics.median(walls), report.score, report.max_score


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--size", type=int, default=1 << 20)
    parser.add_argument("--cases", choices=("all", "policy"), default="all")
    args = parser.parse_args()
    unit = load_unit("unit08")
    honest = {name: (unit.solutions_dir / name).read_bytes() for name in unit.editable}
    hostile = dict(honest, **{"measure.py": honest["measure.py"] + bomb(args.size)})
    cases = None
    if args.cases == "policy":
        from grader.cases import Kind, load_grading

        cases = [c.id for c in load_grading(unit).cases if c.kind is not Kind.SCRIPT]
    ref = timed(unit, honest, cases, args.repeat)
    got = timed(unit, hostile, cases, args.repeat)
    print(f"reference:    {ref[0]:7.2f} s wall (median of {args.repeat}), {ref[1]:g}/{ref[2]:g}")
    print(f"compile bomb: {got[0]:7.2f} s wall (median of {args.repeat}), {got[1]:g}/{got[2]:g}")
    print(f"ratio: {got[0] / ref[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
