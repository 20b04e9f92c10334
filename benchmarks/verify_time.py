#!/usr/bin/env python3
"""CPU time of the trusted replay (``verify.replay_run``) on a unit's graded cases.

    python benchmarks/verify_time.py [--unit unit08 ...] [--repeat 3]

Each case's golden run is replayed on the case's device under the case's limits, as the
grader judges a submission's run file; the time is the CPU seconds (``time.process_time``)
of replaying every case of the unit once, after one untimed warm-up. It prints the median
of ``--repeat`` rounds per unit and exits 1 if a golden run is not replayed clean. Run it in
two checkouts, one after the other, to compare the replay of each.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader import verify  # noqa: E402
from grader.cases import case_trace_doc, load_grading  # noqa: E402
from grader.course.golden import case_limits, golden_path, load_golden  # noqa: E402
from grader.units import load_unit  # noqa: E402


def jobs(unit_id: str) -> list[tuple]:
    unit = load_unit(unit_id)
    out = []
    for case in load_grading(unit).cases:
        if golden_path(unit, case).is_file():
            doc = load_golden(unit, case)
            limits = case_limits(unit, case)
            out.append((case.id, doc["run"], case_trace_doc(unit, case), doc["device"], limits))
    return out


def replay_all(work: list[tuple]) -> list[str]:
    dirty = []
    for case_id, run, trace, device, limits in work:
        problems, _ = verify.replay_run(run, trace, device, limits=limits)
        if problems:
            dirty.append(f"{case_id}: {problems[0].message}")
    return dirty


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unit", action="append", default=None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    failed = False
    for unit_id in args.unit or ["unit08", "unit09"]:
        work = jobs(unit_id)
        dirty = replay_all(work)  # the warm-up
        for line in dirty:
            print(f"{unit_id}: not clean: {line}")
        failed |= bool(dirty)
        times = []
        for _ in range(args.repeat):
            began = time.process_time()
            replay_all(work)
            times.append(time.process_time() - began)
        print(f"{unit_id}: {len(work)} cases, replay median {statistics.median(times):.3f} s CPU")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
