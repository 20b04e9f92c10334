#!/usr/bin/env python3
"""Exercise 31.9 (optional; given, not graded): per-request and per-token fairness disagree.

    python3 exercises.py 31.9 [--a 10] [--b 1000] [--rounds 10] [--json]

Tenant A's requests each need 10 output tokens, tenant B's 1,000; both always have work
waiting. Fair per request, each round finishes one request of each: B gets 1,000 of every
1,010 tokens, about 100 times A's share. Fair per token, each round gives each tenant 1,000
tokens: A finishes 100 requests for B's one. The two notions answer different questions; the
per-token one is still not fair in device time when B's longer context makes each of its
tokens read more KV (calibrated device time, with a floor share per tenant, is the chapter's
way out). Counts are exact; the rounds only scale them.
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servesim.cliargs import int_at_least


def fairness(a: int, b: int, rounds: int) -> dict:
    per_request = {"requestsA": rounds, "requestsB": rounds, "tokensA": rounds * a,
                   "tokensB": rounds * b}  # fmt: skip
    quantum = max(a, b)  # tokens each tenant gets a round when fair per token
    per_token = {"requestsA": rounds * quantum // a, "requestsB": rounds * quantum // b,
                 "tokensA": rounds * quantum, "tokensB": rounds * quantum}  # fmt: skip
    share = Fraction(per_request["tokensB"], per_request["tokensA"] + per_request["tokensB"])
    return {
        "exercise": "31.9",
        "tokensPerRequest": {"A": a, "B": b},
        "rounds": rounds,
        "perRequest": per_request,
        "perToken": per_token,
        "perRequestTokenShareB": [share.numerator, share.denominator],
        "perTokenRequestRatio": [per_token["requestsA"], per_token["requestsB"]],
    }


def render(r: dict) -> str:
    req, tok = r["perRequest"], r["perToken"]
    share = r["perRequestTokenShareB"]
    return "\n".join([
        f"exercise 31.9: A needs {r['tokensPerRequest']['A']} tokens a request, B "
        f"{r['tokensPerRequest']['B']}; {r['rounds']} rounds, both always backlogged",
        f"  fair per request: A {req['requestsA']} requests / {req['tokensA']} tokens, B "
        f"{req['requestsB']} requests / {req['tokensB']} tokens (B's token share "
        f"{share[0]}/{share[1]} = {share[0] / share[1]:.1%})",
        f"  fair per token:   A {tok['requestsA']} requests / {tok['tokensA']} tokens, B "
        f"{tok['requestsB']} requests / {tok['tokensB']} tokens (A finishes "
        f"{tok['requestsA'] // max(tok['requestsB'], 1)} requests for each of B's)",
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="exercises.py 31.9", description=__doc__.split("\n")[0])
    parser.add_argument("--a", type=int_at_least(1), default=10, help="A's tokens a request")
    parser.add_argument("--b", type=int_at_least(1), default=1000, help="B's tokens a request")
    parser.add_argument("--rounds", type=int_at_least(1), default=10)
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    result = fairness(args.a, args.b, args.rounds)
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
