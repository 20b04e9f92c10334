#!/usr/bin/env python3
"""In-process A/B of the lab engine: this checkout's ``servesim`` against an earlier commit's.

    python benchmarks/components_ab.py [--before REV] [--pairs 20] [--workload unit08|vidur]

``REV`` (default ``main``): the commit whose ``servesim/`` is the baseline (``git archive``
into a temporary folder). Both versions are loaded into this one process under the name
``servesim``; each side's modules are put in ``sys.modules`` only while that side runs, and
each side runs the unit 08 reference policies (``solutions/unit08/policies.py``) loaded
against its own engine. A workload is run as the reference runs it (``simulate`` then
``runfile.build_run``):

- ``unit08``: every graded unit 08 case that runs a policy (its trace, transform, device,
  params, budget, queue cap and admit function), once each;
- ``vidur``: the Vidur job's scheduler and device (``engine_cost.py``) on the 1,000 requests
  of ``tests/data/azure-conv-1000.json``.

Each pair runs every job on both sides in turn, the order alternating between pairs (before
first on even pairs), after a warm-up run of each side that is not timed, and sums each
side's CPU seconds (``time.process_time``: the shared machine's other work is not counted,
what its caches lose is). It prints each side's median seconds, the median of the pairs'
after/before ratios with its range, and exits 1 unless both sides wrote the same run entries.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _engine_modules() -> dict:
    return {k: v for k, v in sys.modules.items() if k == "servesim" or k.startswith("servesim.")}


class Side:
    """One version of the engine and the reference policies loaded against it."""

    def __init__(self, name: str, modules: dict, policies):
        self.name, self.modules = name, modules
        self.policies, self.sarathi = policies[0], policies[1].sarathi

    @contextmanager
    def active(self):
        kept = _engine_modules()
        for key in kept:
            del sys.modules[key]
        sys.modules.update(self.modules)
        try:
            yield self.modules["servesim"]
        finally:
            for key in _engine_modules():
                del sys.modules[key]
            sys.modules.update(kept)


def _policies(name: str):
    """The unit 08 reference policies and the Vidur job's ``sarathi``, loaded against the
    ``servesim`` now in ``sys.modules``."""
    modules = []
    for path in (ROOT / "solutions/unit08/policies.py", ROOT / "benchmarks/engine_cost.py"):
        spec = importlib.util.spec_from_file_location(f"{name}_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules.append(module)
    return modules


def load_sides(rev: str, folder: Path) -> tuple[Side, Side]:
    """(before, after): ``rev``'s servesim and this checkout's, each with its policies."""
    import servesim.runfile

    after = Side("after", _engine_modules(), _policies("_ab_after_policies"))
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "servesim"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    for key in after.modules:
        del sys.modules[key]
    sys.path.insert(0, str(folder))
    try:
        import servesim.runfile  # noqa: F401  (rev's)

        before = Side("before", _engine_modules(), _policies("_ab_before_policies"))
    finally:
        sys.path.remove(str(folder))
        for key in _engine_modules():
            del sys.modules[key]
        sys.modules.update(after.modules)
    return before, after


def unit08_jobs() -> list[dict]:
    """Each graded unit 08 case that runs a policy, as plain data both sides can read."""
    from grader.cases import case_trace_doc, load_grading
    from grader.course.golden import case_device_json
    from grader.units import load_unit

    unit = load_unit("unit08")
    specs = {p["name"]: p for p in unit.policies}
    jobs, seen = [], set()
    for case in load_grading(unit).cases:
        if case.policy not in specs:
            continue
        key = json.dumps([case.trace, case.policy, case.params, case.device, case.queue_cap,
                          case.overhead_ms, repr(case.transform)], sort_keys=True)  # fmt: skip
        if key in seen:
            continue
        seen.add(key)
        spec = specs[case.policy]
        jobs.append(
            {
                "trace": case_trace_doc(unit, case),
                "device": case_device_json(unit, case),
                "function": spec["function"],
                "admit": spec.get("admit"),
                "params": dict(case.params),
                "policy": case.policy,
                "queue_cap": case.queue_cap,
            }
        )
    return jobs


def vidur_jobs() -> list[dict]:
    from engine_cost import BUDGET, DEVICE

    trace = json.loads((ROOT / "tests/data/azure-conv-1000.json").read_text(encoding="utf-8"))
    job = {"trace": trace, "device": DEVICE.to_json(), "function": None, "admit": None}
    return [job | {"params": {"budget": BUDGET}, "policy": "sarathi", "queue_cap": None}]


def run_side(side: Side, jobs: list[dict]) -> tuple[float, list[dict]]:
    """CPU seconds of this process to run every job on ``side`` (after parsing its trace and
    device), and the run entries."""
    with side.active() as servesim:
        build_run = sys.modules["servesim.runfile"].build_run
        ready = []
        for job in jobs:
            trace = servesim.parse_trace(job["trace"], source="trace")
            device = servesim.DeviceProfile.from_json(job["device"])
            function = getattr(side.policies, job["function"]) if job["function"] else side.sarathi
            admit = getattr(side.policies, job["admit"]) if job["admit"] else None
            ready.append((job, trace, device, function, admit))
        runs = []
        gc.collect()
        started = time.process_time()
        for job, trace, device, function, admit in ready:
            params = job["params"]
            timeline = servesim.simulate(
                trace,
                lambda view, f=function, p=params: f(view, **p),
                device,
                budget=params.get("budget"),
                queue_cap=job["queue_cap"],
                admit=admit,
            )
            limits = {"budget": params.get("budget"), "queueCap": job["queue_cap"]}
            runs.append(
                build_run(job["policy"], params, device, timeline, None, extended=True,
                          limits=limits)
            )  # fmt: skip
        return time.process_time() - started, runs


def run_pair(sides: tuple[Side, Side], jobs: list[dict]) -> dict[str, float]:
    """One pair: each job on both sides in turn (in ``sides`` order), seconds summed per side,
    so that a change in the machine's load falls on both alike."""
    spent = {side.name: 0.0 for side in sides}
    for job in jobs:
        for side in sides:
            spent[side.name] += run_side(side, [job])[0]
    return spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="the baseline commit (default main)")
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--workload", choices=("unit08", "vidur"), default="unit08")
    args = parser.parse_args()
    jobs = unit08_jobs() if args.workload == "unit08" else vidur_jobs()
    with tempfile.TemporaryDirectory() as folder:
        before, after = load_sides(args.before, Path(folder))
        _, want = run_side(before, jobs)  # warm-up, and the runs both sides must write
        _, got = run_side(after, jobs)
        same = json.dumps(want, sort_keys=True) == json.dumps(got, sort_keys=True)
        times = {"before": [], "after": []}
        for pair in range(args.pairs):
            spent = run_pair((before, after) if pair % 2 == 0 else (after, before), jobs)
            for name, seconds in spent.items():
                times[name].append(seconds)
    ratios = [a / b for a, b in zip(times["after"], times["before"])]
    print(f"workload {args.workload}: {len(jobs)} runs; before = {args.before}'s servesim")
    for name in ("before", "after"):
        print(f"  {name:>6}: median {statistics.median(times[name]):.4f} s over {args.pairs}")
    print(
        f"  after/before: median {statistics.median(ratios):.4f} "
        f"(min {min(ratios):.4f}, max {max(ratios):.4f}, {args.pairs} pairs)"
    )
    print(f"  run entries identical: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
