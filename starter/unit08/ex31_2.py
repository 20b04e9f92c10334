#!/usr/bin/env python3
"""Exercise 31.2 and section 31.2's length buckets, run with YOUR static() and continuous().

    python3 exercises.py 31.2 [--bucket 256] [--wait-ms 50] [--json]

Figure 31.1: three requests arrive together needing 4, 1 and 1 decode rounds after a free
prefill, K = 2 (trace ``static-vs-continuous``). On ``devices/round-10ms.json`` (every round
10 ms) the chapter gives completions A 40, B 10, C 50 ms under static batching (mean 100/3) and
A 40, B 10, C 20 ms under continuous batching (mean 70/3); exercise 31.2 changes the rounds to
6 ms for one sequence and 10 ms for two (``devices/round-6-10ms.json``): static 28, 10, 34
(mean 24), continuous 32, 10, 20 (mean 62/3). Each is run here through ``simulate.py`` with
your policies, and the completions are read from the run files.

Length buckets and the wait window (section 31.2): A (100 prompt tokens) and B (900) arrive at
0 ms, C (120, A's bucket of ``--bucket`` tokens) at 5 ms. ``static`` runs three ways on
``round-10ms``: one bucket and no wait (A and B launch at once), buckets with a ``--wait-ms``
window (C fills A's bucket at 5 ms; B waits), and the same without C (each bucket waits out
the window): the first tokens show what waiting for similar lengths costs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servesim.cli import main as simulate
from servesim.cliargs import int_at_least
from servesim.stubs import run_main

HERE = Path(__file__).resolve().parent

DEVICES = {"figure 31.1": "devices/round-10ms.json", "exercise 31.2": "devices/round-6-10ms.json"}
BUCKET_TRACE = [
    {"id": "A", "arrivalMs": 0, "inputTokens": 100, "outputTokens": 2},
    {"id": "B", "arrivalMs": 0, "inputTokens": 900, "outputTokens": 2},
    {"id": "C", "arrivalMs": 5, "inputTokens": 120, "outputTokens": 2},
]


class Unfinished(Exception):
    """simulate.py refused (a stub not implemented yet): its one line was printed."""


def run(trace: str, device: str, policy: str, *flags: str) -> dict:
    """One run entry of ``simulate.py --trace TRACE --device-profile DEVICE --policy POLICY``."""
    with tempfile.TemporaryDirectory(prefix="ex31-2-") as tmp:
        out = Path(tmp) / "run.json"
        argv = ["--trace", trace, "--device-profile", str(HERE / device), "--policy", policy,
                *flags, "--output", str(out)]  # fmt: skip
        with contextlib.redirect_stdout(io.StringIO()):
            code = run_main("exercises.py 31.2", lambda a: simulate(a, lab_dir=HERE), argv)
        if code != 0:
            raise Unfinished(code)
        return json.loads(out.read_text(encoding="utf-8"))["runs"][0]


def completions(entry: dict) -> dict:
    done = {r["id"]: r["finishMs"] for r in entry["requests"]}
    mean = Fraction(round(sum(done.values())), len(done))
    return {"finishMs": done, "mean": [mean.numerator, mean.denominator]}


def buckets(bucket: int, wait_ms: int) -> dict:
    """static on the bucket trace three ways: who each prefill step launches, and TTFTs."""
    with tempfile.TemporaryDirectory(prefix="ex31-2-") as tmp:
        shown = {}
        for label, requests, flags in (
            ("one bucket, no wait", BUCKET_TRACE, []),
            (f"buckets of {bucket}, wait {wait_ms} ms", BUCKET_TRACE,
             ["--bucket", str(bucket), "--wait-ms", str(wait_ms)]),
            (f"buckets of {bucket}, wait {wait_ms} ms, no C", BUCKET_TRACE[:2],
             ["--bucket", str(bucket), "--wait-ms", str(wait_ms)]),
        ):  # fmt: skip
            path = Path(tmp) / f"buckets-{len(shown)}.json"
            doc = {"name": "buckets", "description": "section 31.2", "requests": requests}
            path.write_text(json.dumps(doc), encoding="utf-8")
            entry = run(str(path), DEVICES["figure 31.1"], "static", *flags)
            groups = [[e["startMs"], sorted(c["id"] for c in e["prefill"])]
                      for e in entry["events"] if e["prefill"]]  # fmt: skip
            shown[label] = {
                "groups": groups,
                "ttftMs": {r["id"]: r["ttftMs"] for r in entry["requests"]},
            }
        return shown


def figures(bucket: int, wait_ms: int) -> dict:
    result = {"exercise": "31.2", "rounds": {}}
    for label, device in DEVICES.items():
        result["rounds"][label] = {
            policy: completions(run("static-vs-continuous", device, policy))
            for policy in ("static", "continuous")
        }
    result["buckets"] = buckets(bucket, wait_ms)
    return result


def _mean(pair: list[int]) -> str:
    return f"{pair[0]}/{pair[1]}" if pair[1] != 1 else str(pair[0])


def render(r: dict) -> str:
    lines = ["exercise 31.2: completions (ms) of A, B, C on static-vs-continuous, K = 2"]
    for label, policies in r["rounds"].items():
        lines.append(f"  {label} ({DEVICES[label]}):")
        for policy, c in policies.items():
            done = ", ".join(f"{k} {v:g}" for k, v in sorted(c["finishMs"].items()))
            lines.append(f"    {policy:10s} {done}; mean {_mean(c['mean'])}")
    lines.append("section 31.2, length buckets and the wait window (static, round-10ms):")
    for label, shown in r["buckets"].items():
        groups = "; ".join(f"{'+'.join(ids)} at {start:g} ms" for start, ids in shown["groups"])
        ttft = ", ".join(f"{k} {v:g}" for k, v in sorted(shown["ttftMs"].items()))
        lines.append(f"  {label}: groups {groups}; TTFT (ms) {ttft}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="exercises.py 31.2", description=__doc__.split("\n")[0])
    parser.add_argument("--bucket", type=int_at_least(1), default=256, help="bucket width (256)")
    parser.add_argument("--wait-ms", type=int_at_least(0), default=50, help="wait window (50)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    try:
        result = figures(args.bucket, args.wait_ms)
    except Unfinished as exc:
        return exc.args[0]
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
