"""Benchmark: writing the run picture of a 20,000-request run, whole process, as a user runs it.

Makes the run as ``view_large_run.py`` does (the unit 08 reference policy ``paged`` on the
256-page pool, the public trace azure-conv-slice's sizes at 2 arrivals per second, written
compact) or takes one (``--run``), then runs ``python3 view.py RUN`` in a fresh process
``--repeats`` times for the page alone and as many with ``--format chrome-trace``, and prints
the median wall time and the peak resident memory of each, with the machine's load.

    .venv/bin/python benchmarks/view_speed.py [--requests 20000] [--run RUN] [--code DIR]

``--code`` names the folder that holds the ``servesim`` package to time (default: this
checkout), so that two versions can be compared on the same run file.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from view_large_run import make_run  # noqa: E402

# what a lab's view.py does, with the package's folder as an argument
VIEW = "import sys; sys.path.insert(0, sys.argv.pop(1)); from servesim.runview.cli import main; "
VIEW += "sys.exit(main())"


def whole_process(code: Path, args: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system: what a busy machine inflates least) and peak
    resident memory (MB) of one ``view.py`` process."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", VIEW, str(code), *args], stdout=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"view.py {' '.join(args)} failed (exit {child.returncode})")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=2.0, help="open-loop arrivals per second")
    parser.add_argument("--run", help="an existing run file (skips making one)")
    parser.add_argument("--code", default=str(REPO), help="the folder holding servesim/")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(args.run) if args.run else Path(tmp) / "run.json"
        if not args.run:
            start = time.perf_counter()
            make_run(run, args.requests, args.rate)
            print(f"made the run in {time.perf_counter() - start:.1f} s")
        print(f"run file {run.stat().st_size / 1e6:.1f} MB; servesim from {args.code}")
        print(f"machine: {os.cpu_count()} cores, load before {os.getloadavg()[0]:.2f}")
        out = str(Path(tmp) / "run.html")
        for label, extra in (("html", []), ("html + chrome-trace", ["--format", "chrome-trace"])):
            times = [
                whole_process(Path(args.code), [str(run), "--output", out, *extra])
                for _ in range(args.repeats)
            ]
            wall = statistics.median(t[0] for t in times)
            cpu = statistics.median(t[1] for t in times)
            peak = max(t[2] for t in times)
            print(
                f"  {label:20s} median {wall:6.2f} s wall, {cpu:6.2f} s CPU of {args.repeats} "
                f"(wall {', '.join(f'{t[0]:.2f}' for t in times)}), peak memory {peak:.0f} MB"
            )
        print(f"machine load after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
