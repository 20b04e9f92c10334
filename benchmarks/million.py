#!/usr/bin/env python3
"""Benchmark: the fast path from 10^5 to 10^6 requests, time and peak memory per size.

The job: the Azure conversation trace (CC-BY 4.0, Azure/AzurePublicDataset; Patel et al.,
"Splitwise", ISCA 2024) tiled to each size (copy k starts when copy k-1's last request
arrived, ids made unique), ``budgeted`` and ``paged`` with a 512-token budget on the affine
A30/7B device of ``vs_vidur.py``, run as the TA runs it: ``infralab simulate --unit unit08
--reference --policy P --budget 512 --engine fast --format compact --output RUN.json``, one
whole process per size and policy, ``--repeat`` rounds (medians printed).

For each policy it prints wall seconds, CPU seconds (user + sys: what the process itself
spent, which other processes' load does not inflate as it does the wall time), peak RSS, time
and memory per request, and the ratios that show whether a path grows faster than the trace:
time (wall and CPU) per request at the largest size over that at the smallest, and the same for
memory (1.0: linear). A quadratic path or a per-request object that should be a column shows as
a ratio well above 1. Then whether the largest run keeps the limits of issue #38 (at most
60 s and 1 GiB, time per request within 25 % of the smallest size's). Figures depend on the
machine and its load: quote them with both (the load average is printed).

    .venv/bin/python benchmarks/million.py [--sizes 100000,1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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
MOST_SECONDS, MOST_MIB, MOST_RATIO = 60.0, 1024.0, 1.25  # the largest run's limits (#38)


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


def children_cpu() -> float:
    """User + system seconds of this process's finished children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


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
    results: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
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
                    before = children_cpu()
                    wall, rss, _ = timed_child(command, ROOT)
                    cpu = children_cpu() - before
                    results.setdefault((policy, size), []).append((wall, rss, cpu))
                    print(
                        f"  {policy} {size:,}: {wall:.2f} s, CPU {cpu:.2f} s, {rss:.0f} MiB "
                        f"({load()})",
                        flush=True,
                    )
    print(
        f"\n{'policy':10}{'requests':>10}{'wall':>9}{'CPU':>9}{'peak RSS':>11}"
        f"{'µs/req':>9}{'CPU µs/req':>11}{'KiB/req':>9}"
    )
    verdicts = []
    for policy in policies:
        per = {}
        for size in sizes:
            wall, rss, cpu = (
                statistics.median(r[k] for r in results[policy, size]) for k in range(3)
            )
            per[size] = (wall / size, rss / size, cpu / size)
            print(
                f"{policy:10}{size:10,}{wall:8.2f}s{cpu:8.2f}s{rss:7.0f} MiB"
                f"{wall / size * 1e6:9.1f}{cpu / size * 1e6:11.1f}{rss * 1024 / size:9.2f}"
            )
        small, large = sizes[0], sizes[-1]
        ratio = [per[large][k] / per[small][k] for k in range(3)]
        print(
            f"{policy:10}per request at {large:,} / at {small:,}: time {ratio[0]:.2f} "
            f"(CPU {ratio[2]:.2f}), memory {ratio[1]:.2f}"
        )
        wall, rss = per[large][0] * large, per[large][1] * large
        verdicts.append(
            f"{policy} at {large:,}: {wall:.1f} s {'<=' if wall <= MOST_SECONDS else '>'} "
            f"{MOST_SECONDS:.0f} s, {rss:.0f} MiB {'<=' if rss <= MOST_MIB else '>'} "
            f"{MOST_MIB:.0f} MiB, time per request ratio {ratio[0]:.2f} "
            f"{'<=' if ratio[0] <= MOST_RATIO else '>'} {MOST_RATIO} (CPU {ratio[2]:.2f})"
        )
    print("\nlimits (issue #38):\n  " + "\n  ".join(verdicts))
    print(f"(medians of {args.repeat} rounds; {load()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
