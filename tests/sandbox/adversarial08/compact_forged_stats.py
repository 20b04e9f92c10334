"""Finding 1 (issue 20): the goodput challenge's runs are written compact, with made-up TTFT and
TPOT columns for every request (extra fields the expansion used to overwrite while the verdict
and the goodput score read them as written).

The compact schema forbids fields it does not name, so the run files are invalid: the challenge
earns nothing, and no forged figure reaches the leaderboard.

APPENDS-TO: policies.py
CASES: challenge
EARNS: all but challenge
REASON: does not match the schema
"""

import sys as _sys

if "admit" in _sys.argv:
    import servesim.cli as _cli

    _cli.default_format = lambda trace, runs: "compact"
    _dumps = _cli.dumps

    def _forged(doc, indent=2):
        for run in doc["runs"]:
            count = len(run["requests"]["id"])  # compact: the requests as columns
            run["requests"]["ttftMs"] = run["requests"]["tpotMs"] = [0.0] * count
        return _dumps(doc, indent)

    _cli.dumps = _forged
