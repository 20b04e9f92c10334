#!/usr/bin/env python3
"""Exercise 31.6 (given; not graded): Little's law on a step function of the number in system.

    python3 exercises.py 31.6 [--intervals 0 2 1 3] [--window 0 3] [--json]

Two requests reside over [0, 2) and [1, 3) s, observed over [0, 3]. N(t), the number in the
system, is 1, 2, 1 on the three seconds: its area is 4, the sum of the residences clipped to
the window (2 + 2, formula 31.7). Over the window the mean number is 4/3, the completion rate
2/3 per second and the mean residence 2 s, and 4/3 = 2/3 x 2 (Little). A request that starts or
ends outside the window counts only its overlap with it, in the area and in the residences
alike; the completion rate counts completions in the window. Exact fractions throughout.
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction


def little(intervals: list[tuple[Fraction, Fraction]], start: Fraction, end: Fraction) -> dict:
    """The area under N(t) walked step by step, against the clipped residences."""
    edges = sorted({start, end, *(t for a, c in intervals for t in (a, c) if start < t < end)})
    steps, area = [], Fraction(0)
    for left, right in zip(edges, edges[1:]):
        n = sum(a <= left < c for a, c in intervals)
        steps.append([str(left), str(right), n])
        area += n * (right - left)
    clipped = sum(max(Fraction(0), min(c, end) - max(a, start)) for a, c in intervals)
    done = [c - a for a, c in intervals if start <= a and c <= end]
    length = end - start
    mean_n, rate = area / length, Fraction(len(done)) / length
    residence = sum(done, Fraction(0)) / len(done) if done else None
    return {
        "exercise": "31.6",
        "steps": steps,
        "area": str(area),
        "clippedResidences": str(clipped),
        "meanInSystem": str(mean_n),
        "completionRate": str(rate),
        "meanResidence": None if residence is None else str(residence),
        "littleHolds": residence is not None and mean_n == rate * residence,
    }


def render(r: dict) -> str:
    steps = ", ".join(f"N = {n} on [{a}, {b})" for a, b, n in r["steps"])
    return "\n".join([
        f"exercise 31.6: {steps}",
        f"  area under N(t) = {r['area']}; residences clipped to the window = "
        f"{r['clippedResidences']}",
        f"  mean in system {r['meanInSystem']} = completion rate {r['completionRate']} x mean "
        f"residence {r['meanResidence']}: {'holds' if r['littleHolds'] else 'does not hold'}",
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="exercises.py 31.6", description=__doc__.split("\n")[0])
    parser.add_argument("--intervals", type=Fraction, nargs="+", default=[0, 2, 1, 3],
                        help="start end pairs, s (0 2 1 3)")  # fmt: skip
    parser.add_argument("--window", type=Fraction, nargs=2, default=[0, 3], help="(0 3)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    values = [Fraction(v) for v in args.intervals]
    if len(values) % 2 or any(a >= c for a, c in zip(values[::2], values[1::2])):
        parser.error("--intervals takes start end pairs with start < end")
    start, end = (Fraction(v) for v in args.window)
    if start >= end:
        parser.error("--window takes a start before its end")
    result = little(list(zip(values[::2], values[1::2])), start, end)
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
