#!/usr/bin/env python3
"""Exercise 31.7 (optional; given, not graded): M/M/1 on the lab's engine against its formulas.

    python3 exercises.py 31.7 [--rates 80 95] [--mu 100] [--requests 20000] [--seeds 3] [--json]

One server (K = 1), first come first served, Poisson arrivals at lambda per second and
exponential service at mu per second: the residence T is exponential with rate mu - lambda, so
E[T] = 1 / (mu - lambda) and its p99 is ln 100 / (mu - lambda) (formulas 31.10 and 31.13):
50 ms and 230 ms at lambda = 80, mu = 100; 200 ms and 921 ms at lambda = 95. Each request here
is a prompt whose prefill is its service time (0.001 ms a token, one output token, no
overhead) on this lab's engine, run by a given one-server policy; E2E is the residence. Each
seed is one replication; the spread across seeds is the sampling error (near lambda = mu the
queue remembers long and the estimates wander). Continuous batching breaks the model's
assumptions: several requests share a step, a step's time depends on who is in it, and the
policy's order is not first come first served.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servesim import Batch, DeviceProfile, PrefillChunk, parse_trace, simulate
from servesim.cliargs import int_at_least
from servesim.metrics import percentile

MS_PER_TOKEN = 0.001
DEVICE = DeviceProfile(
    prefill_ms_per_token=MS_PER_TOKEN, decode_batch_ms=0.0, overhead_ms=0.0, max_active=1
)


def one_server(view) -> Batch:
    """The queue's head gets the whole server: its whole prefill (= its service) in one step."""
    head = view.waiting[0]
    return Batch(prefill=[PrefillChunk(head.id, head.remaining_prefill)])


def replication(lam: float, mu: float, requests: int, seed: int) -> dict:
    rng, now, rows = random.Random(seed), 0.0, []
    for n in range(requests):
        now += rng.expovariate(lam / 1000)  # ms
        tokens = max(1, round(rng.expovariate(mu / 1000) / MS_PER_TOKEN))
        rows.append({"id": f"m{n}", "arrivalMs": now, "inputTokens": tokens, "outputTokens": 1})
    trace = parse_trace({"name": "mm1", "description": "M/M/1", "requests": rows})
    timeline = simulate(trace, one_server, DEVICE)
    residences = [s.token_times_ms[-1] - s.arrival_ms for s in timeline.sequences]
    return {"mean": statistics.fmean(residences), "p99": percentile(residences, 99)}


def mm1(rates: list[float], mu: float, requests: int, seeds: int) -> dict:
    result = {"exercise": "31.7", "mu": mu, "requests": requests, "seeds": seeds, "rates": []}
    for lam in rates:
        runs = [replication(lam, mu, requests, seed) for seed in range(seeds)]
        result["rates"].append({
            "lambda": lam,
            "meanFormulaMs": 1000 / (mu - lam),
            "p99FormulaMs": 1000 * math.log(100) / (mu - lam),
            "meanMs": [r["mean"] for r in runs],
            "p99Ms": [r["p99"] for r in runs],
        })  # fmt: skip
    return result


def render(r: dict) -> str:
    lines = [f"exercise 31.7: M/M/1, mu = {r['mu']:g}/s, {r['requests']} requests a seed, "
             f"{r['seeds']} seeds (the engine, K = 1, FCFS)"]  # fmt: skip
    for row in r["rates"]:
        means = ", ".join(f"{v:.1f}" for v in row["meanMs"])
        p99s = ", ".join(f"{v:.1f}" for v in row["p99Ms"])
        lines.append(
            f"  lambda {row['lambda']:g}/s: mean residence {row['meanFormulaMs']:.1f} ms by "
            f"formula, runs {means}; p99 {row['p99FormulaMs']:.1f} ms by formula, runs {p99s}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="exercises.py 31.7", description=__doc__.split("\n")[0])
    parser.add_argument("--rates", type=float, nargs="+", default=[80.0, 95.0], help="lambda /s")
    parser.add_argument("--mu", type=float, default=100.0, help="service rate mu /s (100)")
    parser.add_argument("--requests", type=int_at_least(100), default=20000)
    parser.add_argument("--seeds", type=int_at_least(1), default=3)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    if any(not 0 < lam < args.mu for lam in args.rates):
        parser.error(f"every rate must be above 0 and below --mu ({args.mu:g}): a stable queue")
    result = mm1(args.rates, args.mu, args.requests, args.seeds)
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
