"""Benchmark: the unit 07 engine on a 20,000-request trace shaped like the real Azure trace.

Arrivals are Poisson; (input, output) length pairs are drawn jointly, with replacement, from the
conversation service's CSV (CC-BY 4.0, Azure/AzurePublicDataset; Patel et al., "Splitwise",
ISCA 2024). The device keeps the unit's shape (fixed cost per prefill token, per decode batch,
per submission) scaled to real prompt lengths, and the arrival rate keeps it busy without an
ever-growing queue. Prints the median of several timed runs of each policy.

    .venv/bin/python benchmarks/simulate_throughput.py [--requests 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import servesim  # noqa: E402

from grader import reference  # noqa: E402
from grader.units import load_unit  # noqa: E402

DEFAULT_CSV = REPO.parent / "shared/data/azure-llm-2023/AzureLLMInferenceTrace_conv.csv"
DEVICE = {"prefill_ms_per_token": 0.1, "decode_batch_ms": 10.0, "overhead_ms": 0.25}
ARRIVALS_PER_S = 4.0
CHUNK = 256


def make_trace(servesim, csv_path: Path, count: int, seed: int = 7):
    with open(csv_path, newline="", encoding="utf-8") as handle:
        pairs = [
            (int(r["ContextTokens"]), int(r["GeneratedTokens"])) for r in csv.DictReader(handle)
        ]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(pairs), size=count)
    arrivals = np.cumsum(rng.exponential(1000.0 / ARRIVALS_PER_S, size=count))
    requests = [
        {
            "id": f"r{i}",
            "arrivalMs": round(float(arrivals[i]), 3),
            "inputTokens": max(1, pairs[p][0]),
            "outputTokens": max(1, pairs[p][1]),
        }
        for i, p in enumerate(picks)
    ]
    return servesim.parse_trace({"name": f"azure-conv-{count}", "requests": requests})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    args = parser.parse_args()
    if not args.csv.is_file():
        print(f"error: trace CSV not found: {args.csv} (pass --csv)", file=sys.stderr)
        return 2

    unit = load_unit("unit07")
    policies = reference.solution_policies(unit)
    trace = make_trace(servesim, args.csv, args.requests)
    device = reference.device_profile(unit, **DEVICE)
    tokens = sum(r.output_tokens for r in trace.requests)
    prefill = sum(r.input_tokens for r in trace.requests)
    print(
        f"trace: {len(trace.requests)} requests, {prefill} prompt tokens, {tokens} output tokens, "
        f"Poisson {ARRIVALS_PER_S:g}/s; device {DEVICE}"
    )
    from servesim.runfile import build_run

    runs = {"fcfs": (policies.fcfs, {}), "chunked": (policies.chunked, {"chunk": CHUNK})}
    for name, (function, params) in runs.items():
        engine_s, total_s = [], []
        for _ in range(args.repeat):
            start = time.perf_counter()
            timeline = servesim.simulate(trace, lambda v, f=function, p=params: f(v, **p), device)
            middle = time.perf_counter()
            run = build_run(name, params, device, timeline, None)
            end = time.perf_counter()
            engine_s.append(middle - start)
            total_s.append(end - start)
        s = run["summary"]
        wall = statistics.median(total_s)
        print(
            f"{name:8} wall {wall:6.2f} s (engine {statistics.median(engine_s):.2f} s) | "
            f"{len(trace.requests) / wall:8.0f} requests/s | "
            f"{tokens / wall:10.0f} token events/s | "
            f"{s['submissions'] / wall:8.0f} submissions/s"
        )
        print(
            f"{'':8} simulated: all done at {s['allDoneMs'] / 1000:.0f} s, "
            f"TTFT p50 {s['ttftMs']['p50']:.0f} ms p99 {s['ttftMs']['p99']:.0f} ms, "
            f"ITL p99 {s['itlMs']['p99']:.1f} ms, max ITL {s['maxItlMs']:.0f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
