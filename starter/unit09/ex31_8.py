#!/usr/bin/env python3
"""Exercise 31.8 (given; not graded): the p99s of two stages do not add up to the total's.

    python3 exercises.py 31.8 [--requests 1000] [--json]

The chapter asks: two random stages have p99s of 100 and 200 ms; is the total's p99 300 ms? No.
This builds requests whose first stage X (waiting and prefill, up to the first token) has p99
100 ms and whose second stage Y (the decode, from the first token to the last) has p99 200 ms,
but whose slow X and slow Y fall on different requests: 1 % of them have X = 150 ms, another
1 % have Y = 250 ms, the rest X = 100 and Y = 200. Then 2 % of the totals exceed 300 ms, so the
total's p99 is 350 ms. What holds whatever the dependence is the union bound: {X + Y > 300} lies
in {X > 100} or {Y > 200}, so P(X + Y > 300) <= 0.01 + 0.01 = 0.02 (300 ms covers 98 %); to
cover 99 %, add the two p99.5s. Percentiles are the lab's (``servesim.metrics.percentile``,
nearest rank).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servesim.cliargs import int_at_least
from servesim.metrics import percentile

P99_X, P99_Y = 100.0, 200.0  # the chapter's stage p99s, ms
SLOW_X, SLOW_Y = 150.0, 250.0  # the slow 1 % of each stage, on different requests


def stages(requests: int) -> tuple[list[float], list[float]]:
    """X and Y per request: the first 1 % slow in X, the next 1 % slow in Y."""
    tail = requests // 100
    xs = [SLOW_X if n < tail else P99_X for n in range(requests)]
    ys = [SLOW_Y if tail <= n < 2 * tail else P99_Y for n in range(requests)]
    return xs, ys


def union_bound(requests: int) -> dict:
    xs, ys = stages(requests)
    totals = [x + y for x, y in zip(xs, ys, strict=True)]
    p99_x, p99_y = percentile(xs, 99), percentile(ys, 99)
    over = sum(t > p99_x + p99_y for t in totals) / requests
    p995 = percentile(xs, 99.5) + percentile(ys, 99.5)
    return {
        "exercise": "31.8",
        "requests": requests,
        "p99X": p99_x,
        "p99Y": p99_y,
        "sumOfP99s": p99_x + p99_y,
        "p99Total": percentile(totals, 99),
        "shareOverSum": over,
        "unionBound": sum(x > p99_x for x in xs) / requests + sum(y > p99_y for y in ys) / requests,
        "sumOfP995s": p995,
        "shareOverP995Sum": sum(t > p995 for t in totals) / requests,
    }


def render(r: dict) -> str:
    return "\n".join([
        f"exercise 31.8: {r['requests']} requests, stage X (to the first token), stage Y (decode)",
        f"  p99 of X = {r['p99X']:.0f} ms, p99 of Y = {r['p99Y']:.0f} ms, their sum "
        f"{r['sumOfP99s']:.0f} ms",
        f"  p99 of X + Y = {r['p99Total']:.0f} ms: the sum of the p99s is not the total's p99",
        f"  share of requests with X + Y > {r['sumOfP99s']:.0f} ms: {100 * r['shareOverSum']:.1f} %"
        f" <= union bound P(X > p99) + P(Y > p99) = {100 * r['unionBound']:.1f} %",
        f"  so {r['sumOfP99s']:.0f} ms is a bound that covers at least "
        f"{100 * (1 - r['unionBound']):.0f} % of requests, not 99 %",
        f"  p99.5 of X + p99.5 of Y = {r['sumOfP995s']:.0f} ms; share above it "
        f"{100 * r['shareOverP995Sum']:.1f} % (at most 0.5 + 0.5 = 1 %): a 99 % bound",
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="exercises.py 31.8", description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int_at_least(200), default=1000)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    result = union_bound(args.requests)
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
