"""Finding 4 (issue 20): a compact run file of a few megabytes whose slices stand for billions
of token times: the expansion allocated them all before any check.

The slices declare more tokens than the trace's requests have and the run is refused before
anything is expanded.

APPENDS-TO: policies.py
CASES: static-burst challenge-deadlines paged-kv-b512-m96
EARNS: none
REASON: declares more work than its trace allows
"""

import sys as _sys

import servesim.cli as _cli

_cli.default_format = lambda trace, runs: "compact"
_dumps = _cli.dumps


def _bomb(doc, indent=2):
    run = doc["runs"][0]
    steps = len(run["decodeSteps"]) or 1
    run["decodeSteps"] = (run["decodeSteps"] or [0]) * (400_000 // steps + 1)
    count = len(run["decodeSteps"])
    run["slices"] = [[n, 0, 0, count] for n in range(len(run["requests"]["id"]))] * 200
    return _dumps(doc, indent=None)


if "--output" in _sys.argv:
    _cli.dumps = _bomb
