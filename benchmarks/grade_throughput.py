#!/usr/bin/env python3
"""Grading throughput: many generated submissions, every unit 07 case, the real sandbox.

    python benchmarks/grade_throughput.py [--count 120] [--jobs N] [--repeat 3] [--profile 12]
                                          [--hostile]

Submissions cycle through correct (the reference), wrong (the mutant corpus) and crashing
ones (a policy that raises, one that exits at import, the untouched starter). Each repeat
grades all of them with ``infralab grade``'s batch path (``--jobs`` processes, default the
batch's own: the number of cores plus one) and prints per-submission latency (median, p90),
submissions per minute, and the CPU time per submission, with the rate that gives on this many
idle cores; the summary
gives the median over repeats. The CPU time is exact where the benchmark can put itself in
a cgroup of its own (root): its processes only, sandboxed children included, so the capacity
figure holds while other work shares the host; elsewhere it is the whole host's time (an
upper bound per submission). ``--profile N`` then grades N submissions one at a
time with timers around the three stages: process start (a sandboxed child running a trivial
case), the child (start + engine over all cases) and the parent's verification.
``--hostile`` then grades every adversarial submission of the test suite alone, with the
unit's limits, and prints the worst-case time.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import dataclasses
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ADVERSARIAL = ROOT / "tests" / "sandbox" / "adversarial"
sys.path.insert(0, str(ROOT))

from grader import sandbox  # noqa: E402
from grader.cases import load_grading  # noqa: E402
from grader.grading import cohort as batch  # noqa: E402
from grader.grading import grade as grading  # noqa: E402
from grader.grading.submission import Submission  # noqa: E402
from grader.labfolder import built  # noqa: E402
from grader.units import load_unit  # noqa: E402

CRASHING = {
    "raises": "def fcfs(view):\n    raise RuntimeError('oops')\n\n\n"
    "def chunked(view, chunk):\n    raise RuntimeError('oops')\n",
    "exits": "import sys\n\nsys.exit(0)\n",
}


def make_submissions(unit, root: Path, count: int) -> list[tuple[Path, str]]:
    kinds: list[tuple[str, bytes]] = [
        ("correct", (unit.solutions_dir / "policies.py").read_bytes())
    ]
    mutants = sorted((ROOT / "labs" / unit.id / "mutants").glob("*.py"))
    kinds += [(f"wrong-{p.stem}", p.read_bytes()) for p in mutants if p.stem != "__init__"]
    kinds += [(f"crash-{k}", v.encode()) for k, v in CRASHING.items()]
    kinds.append(("crash-starter", (unit.lab_dir / "policies.py").read_bytes()))
    # a third correct, a third wrong, a third crashing
    correct, wrong, crash = (
        kinds[:1],
        [k for k in kinds if k[0].startswith("wrong")],
        [k for k in kinds if k[0].startswith("crash")],
    )
    out = []
    for n in range(count):
        group = (correct, wrong, crash)[n % 3] or correct
        name, data = group[(n // 3) % len(group)]
        folder = root / f"{n:04d}-{name}"
        folder.mkdir(parents=True)
        (folder / "policies.py").write_bytes(data)
        out.append((folder, name))
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # nearest rank
    return ordered[int(rank) - 1]


def host_cpu_seconds() -> float:
    """CPU time the whole host has spent so far (every core, every process; /proc/stat)."""
    with open("/proc/stat", encoding="ascii") as handle:
        fields = handle.readline().split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(f) for f in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def _cgroup_counter() -> Path | None:
    """A CPU-time file counting this process and everything it starts from now on: a fresh
    cgroup (v2 ``cpu.stat``, else v1 ``cpuacct.usage``) this process moves into. None without
    root or cgroups."""
    mounts = [line.split() for line in Path("/proc/mounts").read_text().splitlines()]
    v2 = [m[1] for m in mounts if m[2] == "cgroup2"]
    v1 = [m[1] for m in mounts if m[2] == "cgroup" and "cpuacct" in m[3].split(",")]
    for base, name in [(p, "cpu.stat") for p in v2] + [(p, "cpuacct.usage") for p in v1]:
        group = Path(base) / f"infralab-bench-{os.getpid()}"
        try:
            group.mkdir(exist_ok=True)
            (group / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:
            with contextlib.suppress(OSError):
                group.rmdir()
            continue
        atexit.register(_leave, group)
        return group / name
    return None


def _leave(group: Path) -> None:
    with contextlib.suppress(OSError):
        (group.parent / "cgroup.procs").write_text(str(os.getpid()))
        group.rmdir()


def cpu_clock():
    """(a clock of CPU seconds, whether it is exact).

    Exact: the CPU time of this benchmark's own processes, sandboxed children included (a
    cgroup; sandboxed children run in their own PID namespace under bubblewrap, so their CPU
    time never reaches ``RUSAGE_CHILDREN``). Otherwise the whole host's (/proc/stat): on a
    shared host that counts the other work too, an upper bound per submission."""
    counter = _cgroup_counter()
    if counter is None:
        return host_cpu_seconds, False
    if counter.name == "cpu.stat":
        return lambda: int(counter.read_text().split()[1]) / 1e6, True  # usage_usec
    return lambda: int(counter.read_text()) / 1e9, True


def one_repeat(unit, subs, out: Path, jobs: int, limits, cpu_seconds) -> dict:
    started, cpu = time.monotonic(), cpu_seconds()
    result = batch.grade_batch(
        unit, [p for p, _ in subs], out, jobs=jobs, force=True, limits=limits
    )
    wall = time.monotonic() - started
    cpu_per_sub = (cpu_seconds() - cpu) / len(subs)
    latencies = []
    for path, _ in subs:  # the staff view: student views carry no times
        staff = out / batch.STAFF / f"{batch.submission_name(path)}.json"
        latencies.append(json.loads(staff.read_text(encoding="utf-8"))["seconds"])
    assert not result.failed, result.failed
    return {
        "wall_s": wall,
        "per_min": len(subs) / wall * 60,
        "median_s": statistics.median(latencies),
        "p90_s": percentile(latencies, 90),
        "cpu_s": cpu_per_sub,
        "capacity_per_min": (os.cpu_count() or 1) * 60 / cpu_per_sub,
    }


def profile(unit, subs, count: int) -> dict:
    """Seconds per submission in each stage, graded one at a time (no parallelism)."""
    stages = {"child": 0.0, "verify": 0.0}
    run_all, judge = grading.run_all_cases, grading.judge_cases

    def timed_run_all(*args, **kwargs):
        t = time.perf_counter()
        try:
            return run_all(*args, **kwargs)
        finally:
            stages["child"] += time.perf_counter() - t

    def timed_judge(*args, **kwargs):
        t = time.perf_counter()
        try:
            return judge(*args, **kwargs)
        finally:
            stages["verify"] += time.perf_counter() - t

    grading.run_all_cases, grading.judge_cases = timed_run_all, timed_judge
    try:
        total = time.perf_counter()
        for path, _ in subs[:count]:
            grading.grade_submission(unit, path, jobs=1)
        total = time.perf_counter() - total
    finally:
        grading.run_all_cases, grading.judge_cases = run_all, judge
    # process start: a sandboxed child with one trivial case, same files as a real one
    trace = unit.lab_dir / "traces" / "prefill-only.json"
    solution = {"policies.py": (unit.solutions_dir / "policies.py").read_bytes()}
    starts = []
    for _ in range(5):
        t = time.perf_counter()
        sandbox.run_cases(built(unit), solution, [sandbox.CaseRun(trace, ["--policy", "fcfs"])])
        starts.append(time.perf_counter() - t)
    start = statistics.median(starts)
    n = min(count, len(subs))
    child = stages["child"] / n
    return {
        "total": total / n,
        "process start (sandboxed child, trivial case)": start,
        "engine (child time beyond start, all cases)": max(0.0, child - start),
        "verification (judging child: schema, replay, golden)": stages["verify"] / n,
        "other (loading golden, submission, report)": total / n - child - stages["verify"] / n,
    }


def hostile(unit, limits) -> None:
    """Grade each adversarial submission of the test suite alone; print the slowest."""
    times = []
    for path in sorted(ADVERSARIAL.glob("*.py")):
        started = time.perf_counter()
        files = {"policies.py": path.read_bytes()}
        report = grading.grade_submission(unit, Submission(files), limits=limits)
        times.append((time.perf_counter() - started, path.stem, report.score))
    print(f"hostile submissions ({len(times)}, limits of unit.yaml, graded one at a time):")
    for seconds, name, score in sorted(times, reverse=True)[:5]:
        print(f"  {name:28} {seconds:6.1f} s  score {score:g}")
    print(f"worst case: {max(times)[0]:.1f} s (bound: {limits.submission_s:g} s per submission)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=120)
    parser.add_argument("--jobs", type=int, default=None, help="default: the batch's own")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", type=int, default=12, help="submissions to profile (0: skip)")
    parser.add_argument(
        "--per-case", action="store_true", help="one sandboxed child per case (for comparison)"
    )
    parser.add_argument(
        "--hostile",
        action="store_true",
        help="also grade every adversarial test submission with the unit's limits, one at a "
        "time, and print the worst-case time",
    )
    args = parser.parse_args(argv)
    args.jobs = args.jobs or batch.default_jobs()
    unit = load_unit("unit07")
    grading_config = load_grading(unit)
    cases = len(grading_config.cases)
    limits = dataclasses.replace(grading.limits_for(unit), one_child_per_case=args.per_case)
    print(
        f"{args.count} submissions x {cases} cases, jobs={args.jobs}, "
        f"isolation {sandbox.isolation_mode()}, {os.cpu_count()} cores, "
        f"{'one child per case' if args.per_case else 'one child per submission'}, "
        f"load average {os.getloadavg()[0]:.1f} (other work on the host slows every figure)"
    )
    clock, exact = cpu_clock()
    kind = "CPU s" if exact else "host CPU s (upper bound)"
    print(
        "CPU time: this benchmark's processes only (a cgroup)"
        if exact
        else "CPU time: the whole host's (/proc/stat; no cgroup could be made)"
    )
    work = Path(tempfile.mkdtemp(prefix="infralab-bench-"))
    try:
        subs = make_submissions(unit, work / "subs", args.count)
        runs = []
        for n in range(args.repeat):
            row = one_repeat(unit, subs, work / "out", args.jobs, limits, clock)
            runs.append(row)
            print(
                f"run {n + 1}: {row['per_min']:.0f} submissions/min "
                f"(wall {row['wall_s']:.1f} s), latency median {row['median_s']:.3f} s, "
                f"p90 {row['p90_s']:.3f} s; {row['cpu_s']:.3f} {kind} per submission, "
                f"so {row['capacity_per_min']:.0f}/min on {os.cpu_count()} idle cores"
            )
        print(f"load average now {os.getloadavg()[0]:.1f}")
        print(
            f"median of {len(runs)} runs: "
            f"{statistics.median(r['per_min'] for r in runs):.0f} submissions/min, "
            f"latency median {statistics.median(r['median_s'] for r in runs):.3f} s, "
            f"p90 {statistics.median(r['p90_s'] for r in runs):.3f} s, "
            f"{statistics.median(r['cpu_s'] for r in runs):.3f} {kind} per submission "
            f"({statistics.median(r['capacity_per_min'] for r in runs):.0f}/min on idle cores)"
        )
        if args.profile and not args.per_case:
            print(f"where the time goes (seconds per submission, {args.profile} graded serially):")
            for stage, seconds in profile(unit, subs, args.profile).items():
                print(f"  {stage:48} {seconds:.3f}")
        if args.hostile:
            hostile(unit, limits)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
