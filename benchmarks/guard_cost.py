"""Benchmark: the engine's time on a unit 08 run with the policy guard (``contract.Guard``).

Runs unit 08's reference ``continuous``, ``budgeted`` and ``paged`` (on a 2,000-page pool) on
the public trace ``azure-conv-slice`` through the engine, each policy wrapped as the lab wraps
it (``policycall.guarded``), and prints the median of --repeat timings of all three runs
together (each timing runs them --loops times), in CPU seconds of this process (less
disturbed than wall time on a shared machine) and wall seconds. Compare a change to the guard
by running it before and after on the same machine; say what else the machine was running.

    .venv/bin/python benchmarks/guard_cost.py [--repeat 3] [--loops 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from servesim import DeviceProfile, parse_trace, simulate  # noqa: E402
from servesim.policycall import guarded  # noqa: E402

TRACE = REPO / "starter/unit08/traces/azure-conv-slice.json"
POLICIES = REPO / "solutions/unit08/policies.py"


def _reference():
    spec = importlib.util.spec_from_file_location("unit08_reference", POLICIES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def runs():
    """``(name, policy, device)`` for each timed run."""
    lab = json.loads((REPO / "starter/unit08/lab.json").read_text(encoding="utf-8"))
    device = DeviceProfile.from_json(lab["device"])
    paged_device = dataclasses.replace(device, kv_pages=2000)
    module = _reference()
    yield "continuous", guarded(module.continuous), device
    budgeted = guarded(module.budgeted)
    yield "budgeted", lambda view: budgeted(view, budget=512), device
    paged = guarded(module.paged)
    yield "paged", lambda view: paged(view, budget=512), paged_device


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--loops", type=int, default=5)
    args = parser.parse_args()
    trace = parse_trace(json.loads(TRACE.read_text(encoding="utf-8")))
    chosen = list(runs())
    cpu, wall, steps = [], [], 0
    for _ in range(args.repeat):
        start, start_wall = time.process_time(), time.perf_counter()
        for _ in range(args.loops):
            for name, policy, device in chosen:
                steps += len(simulate(trace, policy, device, name=name).events)
        cpu.append(time.process_time() - start)
        wall.append(time.perf_counter() - start_wall)
    print(
        f"{len(chosen)} runs x {args.loops} loops, median of {args.repeat}: "
        f"{statistics.median(cpu):.3f} CPU s, {statistics.median(wall):.3f} wall s"
    )
    print("CPU s: " + ", ".join(f"{t:.3f}" for t in cpu))
    print(f"steps per timing: {steps // args.repeat}; load: {os.getloadavg()}")
    print(f"engine: {Path(sys.modules['servesim'].__file__).parent}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
