"""Benchmark: a TA's loop on one unit, each command as a whole process, as a TA runs it.

Times ``infralab golden --unit U`` (every golden run remade; a file is written only when it
differs), ``infralab golden --unit U --check`` and ``infralab release autograder --unit U``
(the Gradescope bundle, written to a temporary folder), each ``--repeats`` times in a fresh
process, and prints the median wall time and CPU time of each, with the machine's load
averages before and after (the wall time of a loaded machine says little without them).
Afterwards it checks that the golden files are byte for byte what they were before.

    .venv/bin/python benchmarks/ta_loop.py [--unit unit09] [--repeats 3]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
INFRALAB = [sys.executable, "-m", "grader.cli"]


def whole_process(args: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, children included) of one command."""
    start = time.perf_counter()
    child = subprocess.Popen([*INFRALAB, *args], cwd=REPO, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"infralab {' '.join(args)} failed (exit {code})")
    return seconds, usage.ru_utime + usage.ru_stime


def fingerprint(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unit", default="unit09")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    golden = REPO / "traces" / args.unit / "golden"
    before = fingerprint(golden)
    print(f"machine: {os.cpu_count()} cores, load averages (1, 5, 15 min) before: {load()}")
    with tempfile.TemporaryDirectory(prefix="ta-loop-") as tmp:
        commands = {
            "golden": ["golden", "--unit", args.unit],
            "golden --check": ["golden", "--unit", args.unit, "--check"],
            "release autograder": ["release", "autograder", "--unit", args.unit, "--out", tmp],
        }
        for label, command in commands.items():
            times = [whole_process(command) for _ in range(args.repeats)]
            wall = statistics.median(t[0] for t in times)
            cpu = statistics.median(t[1] for t in times)
            each = ", ".join(f"{t[0]:.1f}" for t in times)
            print(f"  {label:20s} median {wall:6.1f} s wall, {cpu:6.1f} s CPU of {args.repeats} "
                  f"(wall {each})")  # fmt: skip
    print(f"load averages after: {load()}")
    same = fingerprint(golden) == before
    print(f"golden files byte-identical to before: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
