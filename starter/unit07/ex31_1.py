#!/usr/bin/env python3
"""Exercise 31.1 (given; not graded): one request's TTFT, TPOT and first wait.

    python3 exercises.py 31.1 [--arrival 0 --start 0.1 --first 0.3 --last 0.9 --tokens 31] [--json]

The chapter's request arrives at 0 s, starts executing at 0.1 s, receives its first token at
0.3 s and its 31st at 0.9 s. The figures come from the lab's own metric code
(``servesim.metrics.request_metrics``, formulas 31.1 and 31.2), run on two token timelines
with those first and last times: evenly spaced, and with one long stall. TTFT (0.3 s) already
contains the wait before execution (0.1 s), so the two do not add; TPOT depends on the first and
last token only (0.6 s over 30 gaps = 0.02 s), so both timelines give it; TTFT + (O - 1) x TPOT
is the completion time (0.3 + 30 x 0.02 = 0.9 s). The longest ITL is what the two differ in.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servesim.cliargs import int_at_least
from servesim.metrics import request_metrics


def timelines(first_ms: float, last_ms: float, tokens: int) -> dict[str, list[float]]:
    """Token times from ``first_ms`` to ``last_ms``: evenly spaced, and with every token but
    the last right after the first (one long stall before the last)."""
    gap = (last_ms - first_ms) / (tokens - 1)
    even = [first_ms + n * gap for n in range(tokens)]
    stalled = [first_ms + n * 0.001 for n in range(tokens - 1)] + [last_ms]
    return {"even": even, "one stall": stalled}


def figures(arrival_s: float, start_s: float, first_s: float, last_s: float, tokens: int) -> dict:
    ms = 1000.0
    runs = {}
    for name, times in timelines(first_s * ms, last_s * ms, tokens).items():
        m = request_metrics(arrival_s * ms, times)
        runs[name] = {
            "ttftS": m["ttftMs"] / ms,
            "tpotS": m["tpotMs"] / ms,
            "maxItlS": m["maxItlMs"] / ms,
            "e2eS": m["e2eMs"] / ms,
        }
    even = runs["even"]
    return {
        "exercise": "31.1",
        "tokens": tokens,
        "firstWaitS": start_s - arrival_s,
        "timelines": runs,
        "ttftPlusGapsS": even["ttftS"] + (tokens - 1) * even["tpotS"],
    }


def render(r: dict) -> str:
    even = r["timelines"]["even"]
    lines = [
        f"exercise 31.1: {r['tokens']} output tokens",
        f"  first wait (arrival to start of execution): {r['firstWaitS']:.3g} s",
        f"  TTFT (arrival to first token, the wait included): {even['ttftS']:.3g} s",
        f"  TPOT = (last - first) / (O - 1) = {even['tpotS']:.3g} s",
        f"  TTFT + (O - 1) x TPOT = {r['ttftPlusGapsS']:.3g} s = E2E {even['e2eS']:.3g} s; "
        "TTFT + first wait would count the wait twice",
    ]
    for name, m in r["timelines"].items():
        lines.append(
            f"  timeline '{name}': TTFT {m['ttftS']:.3g} s, TPOT {m['tpotS']:.3g} s, "
            f"longest ITL {m['maxItlS']:.3g} s"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="exercises.py 31.1", description=__doc__.split("\n")[0])
    parser.add_argument("--arrival", type=float, default=0.0, help="arrival, s (0)")
    parser.add_argument("--start", type=float, default=0.1, help="start of execution, s (0.1)")
    parser.add_argument("--first", type=float, default=0.3, help="first token, s (0.3)")
    parser.add_argument("--last", type=float, default=0.9, help="last token, s (0.9)")
    parser.add_argument("--tokens", type=int_at_least(2), default=31, help="output tokens (31)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    if not args.arrival <= args.start <= args.first <= args.last:
        parser.error("times must be in order: --arrival <= --start <= --first <= --last")
    result = figures(args.arrival, args.start, args.first, args.last, args.tokens)
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
