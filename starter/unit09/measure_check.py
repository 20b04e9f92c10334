"""Run measure.py's functions on one run entry and write the answers as JSON (given; not graded).

    python3 measure_check.py --input CHECK.json --output ANSWERS.json

The grader uses this script to grade measure.py on runs you never see: CHECK.json holds a run
entry (``run``) and what to compute (``args``): ``function`` (one of ``FUNCTIONS``) and what it
needs:

- ``prefill_amplification``, ``waiting_share``, ``itl_split``, ``slow_clients``, ``evidence``:
  nothing more;
- ``mean_queue``: ``windows`` ([[start, end], ...] in ms);
- ``p99``: ``samples`` (a list of value lists; the run is not used);
- ``diagnose``: nothing more (no baseline: a run no rule explains is not enough evidence); the
  answer is the cause and the other causes whose rules fired (``also``), by name.

Answers hold numbers, names and lists only: a ``Ratio`` is written as ``{"num", "den"}`` (its
``what`` label is for the reader and is not graded), an enum by its name.

You can run it on your own run files the same way: {"run": <one entry of a run file's "runs">,
"args": {...}}.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from enum import Enum
from pathlib import Path

import measure
from servesim.stubs import run_main

FUNCTIONS = (
    "p99",
    "prefill_amplification",
    "waiting_share",
    "mean_queue",
    "itl_split",
    "slow_clients",
    "evidence",
    "diagnose",
)


LABELS = ("what",)  # a Ratio's label: for the reader, never graded


def _plain(value):
    """JSON-ready form of what a measure.py function returns: an enum by name, a dataclass as
    its fields but ``LABELS`` (so a ``Ratio`` is ``{"num", "den"}``: its numbers are the answer,
    whatever its label says)."""
    if isinstance(value, Enum):
        return value.name
    if dataclasses.is_dataclass(value):
        fields = [f.name for f in dataclasses.fields(value) if f.name not in LABELS]
        return {name: _plain(getattr(value, name)) for name in fields}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def answers(run: dict, args: dict):
    """What ``args["function"]`` gives on ``run`` (per window or sample list where it takes
    them)."""
    function = args["function"]
    if function in (
        "prefill_amplification",
        "waiting_share",
        "itl_split",
        "slow_clients",
        "evidence",
    ):
        return _plain(getattr(measure, function)(run))
    if function == "mean_queue":
        return [measure.mean_queue(run, s, e) for s, e in args["windows"]]
    if function == "p99":
        return [measure.p99(list(values)) for values in args["samples"]]
    if function == "diagnose":
        found = measure.diagnose(run)
        return {"cause": _plain(found.cause), "also": _plain(list(found.also))}
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
