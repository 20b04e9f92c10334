#!/usr/bin/env python3
"""Benchmark: the fast path from 10^5 to 10^6 requests, time and peak memory per size.

The job: the Azure conversation trace (CC-BY 4.0, Azure/AzurePublicDataset; Patel et al.,
"Splitwise", ISCA 2024) tiled to each size (copy k starts when copy k-1's last request
arrived, ids made unique), ``budgeted`` and ``paged`` with a 512-token budget on the affine
A30/7B device of ``vs_vidur.py``, run as the TA runs it: ``infralab simulate --unit unit08
--reference --policy P --budget 512 --engine fast --format compact --output RUN.json``, one
whole process per size and policy, ``--repeat`` rounds (medians printed).

For each policy it prints wall seconds, peak RSS, time and memory per request, and the two
ratios that show whether a path grows faster than the trace: time per request at the largest
size over that at the smallest, and the same for memory (1.0: linear). A quadratic path or a
per-request object that should be a column shows as a ratio well above 1. Figures depend on
the machine and its load: quote them with both (``uptime`` is printed).

    .venv/bin/python benchmarks/million.py [--sizes 100000,1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from azure_trace import import_azure  # noqa: E402
from vidur_job import BUDGET, DEFAULT_CSV, PROFILE, timed_child  # noqa: E402

POLICIES = ("budgeted", "paged")


def write_tiled(doc: dict, size: int, path: Path) -> None:
    """A trace of ``size`` requests: copies of ``doc``'s requests, each copy after the previous
    one. Written request by request, so that this process stays small: a child's peak RSS as
    the kernel reports it is at least its parent's at the moment it starts."""
    base = doc["requests"]
    span = base[-1]["arrivalMs"]
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps({"name": f"azure-conv-x{size}"})[:-1] + ', "requests": [')
        for n in range(size):
            copy, row = divmod(n, len(base))
            r = base[row]
            request = {
                "id": f"t{copy}-{r['id']}",
                "arrivalMs": round(r["arrivalMs"] + copy * span, 3),
                "inputTokens": r["inputTokens"],
                "outputTokens": r["outputTokens"],
            }
            out.write(("" if n == 0 else ", ") + json.dumps(request))
        out.write("]}\n")


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=DEFAULT_CSV, help="Azure conversation CSV")
    parser.add_argument("--sizes", default="100000,1000000", help="trace sizes, smallest first")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not args.csv.is_file():
        print(f"error: trace CSV not found: {args.csv} (pass --csv)", file=sys.stderr)
        return 2
    sizes = [int(s) for s in args.sizes.split(",")]
    policies = args.policies.split(",")
    doc = import_azure(args.csv, requests=10**9)
    infralab = [sys.executable, "-m", "grader.cli", "simulate", "--unit", "unit08", "--reference"]
    results: dict[tuple[str, int], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="million-") as tmp:
        folder = Path(tmp)
        profile = folder / "profile.json"
        profile.write_text(json.dumps(PROFILE), encoding="utf-8")
        traces = {}
        for size in sizes:
            traces[size] = folder / f"trace-{size}.json"
            write_tiled(doc, size, traces[size])
        print(f"job: the Azure trace ({len(doc['requests'])} requests) tiled; {load()}")
        for _ in range(args.repeat):  # rounds, so that a change in machine load hits every row
            for policy in policies:
                for size in sizes:
                    command = [*infralab, "--policy", policy, "--budget", str(BUDGET)]
                    command += ["--trace", str(traces[size]), "--device-profile", str(profile)]
                    command += ["--engine", "fast", "--format", "compact"]
                    command += ["--output", str(folder / "run.json")]
                    wall, rss, _ = timed_child(command, ROOT)
                    results.setdefault((policy, size), []).append((wall, rss))
                    print(
                        f"  {policy} {size:,}: {wall:.2f} s, {rss:.0f} MiB ({load()})", flush=True
                    )
    print(f"\n{'policy':10}{'requests':>10}{'wall':>9}{'peak RSS':>11}{'µs/req':>9}{'KiB/req':>9}")
    for policy in policies:
        per = {}
        for size in sizes:
            wall = statistics.median(r[0] for r in results[policy, size])
            rss = statistics.median(r[1] for r in results[policy, size])
            per[size] = (wall / size, rss / size)
            print(
                f"{policy:10}{size:10,}{wall:8.2f}s{rss:7.0f} MiB"
                f"{wall / size * 1e6:9.1f}{rss * 1024 / size:9.2f}"
            )
        small, large = sizes[0], sizes[-1]
        print(
            f"{policy:10}per request at {large:,} / at {small:,}: time "
            f"{per[large][0] / per[small][0]:.2f}, memory {per[large][1] / per[small][1]:.2f}"
        )
    print(f"(medians of {args.repeat} rounds; {load()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
