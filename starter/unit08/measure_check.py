"""Run measure.py's functions on one run entry and write the answers as JSON (given; not graded).

    python3 measure_check.py --input CHECK.json --output ANSWERS.json

The grader uses this script to grade measure.py on runs you never see: CHECK.json holds a run
entry (``run``) and what to compute (``args``): ``function`` (one of ``FUNCTIONS``) and what it
needs:

- ``meets_slo``, ``goodput``: ``slo`` ({ttftMs, tpotMs}); ``goodput`` also ``windows``
  ([[start, end], ...] in ms) and an optional quality check (``qualityTier``, ``passRate``,
  ``seed``);
- ``area_under_n``, ``clipped_residence``: ``windows``; ``tpot_means``: nothing more;
- ``steady_state``: ``windows`` and ``tolerance``;
- ``replication``: ``slo``, ``warmupRequests``, ``cooldownRequests``, ``tolerance`` and the
  optional quality check;
- ``interval``: ``samples`` (a list of value lists) and ``confidence`` (the run is not used; a
  sample your function refuses with ValueError is answered "ValueError");
- ``verdict``: ``confidence`` and ``scenarios``, each ``{"steady", "checks": [{"name", "n",
  "mean", "sd", "low", "high", "value", "atLeast"}]}`` (the run is not used).

You can run it on your own run files the same way: {"run": <one entry of a run file's "runs">,
"args": {...}}.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import measure
from servesim.stubs import run_main

FUNCTIONS = (
    "meets_slo",
    "goodput",
    "area_under_n",
    "clipped_residence",
    "tpot_means",
    "steady_state",
    "replication",
    "interval",
    "verdict",
)


def _plain(value):
    """JSON-ready form of what a measure.py function returns."""
    if dataclasses.is_dataclass(value):
        return {k: _plain(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def _passes(args: dict):
    """The quality check the args ask for (None: every request passes)."""
    if "passRate" not in args:
        return None
    tier, rate, seed = args.get("qualityTier", "tier"), args["passRate"], args.get("seed", 1)
    return lambda r: measure.quality_passes(r["id"], tier, rate, seed)


def _interval(values: list[float], confidence: float):
    try:
        return _plain(measure.interval(values, confidence))
    except ValueError:
        return "ValueError"


def _verdict(scenario: dict, confidence: float):
    checks = [
        (
            measure.Interval(c["n"], c["mean"], c["sd"], c["low"], c["high"], confidence),
            measure.Target(c["name"], c["value"], c.get("atLeast", True)),
        )
        for c in scenario["checks"]
    ]
    return _plain(measure.verdict(checks, scenario["steady"]))


def answers(run: dict, args: dict):
    """What ``args["function"]`` gives on ``run``'s requests (per request, window or case)."""
    function, requests = args["function"], run.get("requests", [])
    slo = measure.Slo(
        ttft_ms=args.get("slo", {}).get("ttftMs"), tpot_ms=args.get("slo", {}).get("tpotMs")
    )
    windows = args.get("windows", [])
    if function == "meets_slo":
        return [bool(measure.meets_slo(r, slo)) for r in requests]
    if function == "goodput":
        passes = _passes(args)
        return [_plain(measure.goodput(requests, slo, s, e, passes)) for s, e in windows]
    if function in ("area_under_n", "clipped_residence"):
        return [getattr(measure, function)(requests, s, e) for s, e in windows]
    if function == "tpot_means":
        return _plain(measure.tpot_means(requests))
    if function == "steady_state":
        tolerance = args["tolerance"]
        return [_plain(measure.steady_state(requests, s, e, tolerance)) for s, e in windows]
    if function == "replication":
        result = measure.replication(
            requests,
            slo,
            args["warmupRequests"],
            args["cooldownRequests"],
            args["tolerance"],
            _passes(args),
        )
        return _plain(result)
    if function == "interval":
        return [_interval(values, args["confidence"]) for values in args["samples"]]
    if function == "verdict":
        return [_verdict(s, args["confidence"]) for s in args["scenarios"]]
    raise ValueError(f"unknown function {function!r} (known: {', '.join(FUNCTIONS)})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="measure_check.py", description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="JSON file: {run, args}")
    parser.add_argument("--output", required=True, help="write the answers (JSON) here")
    options = parser.parse_args(argv)
    try:
        doc = json.loads(Path(options.input).read_text(encoding="utf-8"))
        run, args = doc["run"], doc["args"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(
            f"measure_check.py: error: {options.input}: not a check file ({exc})", file=sys.stderr
        )
        return 2
    result = {"function": args.get("function"), "answers": answers(run, args)}
    Path(options.output).write_text(json.dumps(result, allow_nan=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(run_main("measure_check.py", main))
