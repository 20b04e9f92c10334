"""Finding 2 (issue 20): a compact run whose rejected (and every other) request carries a
non-numeric TTFT: the leaderboard's p99 became a string and the report crashed the grader.

Now the schema rejects the run file, the challenge earns nothing, and the report renders.

APPENDS-TO: policies.py
CASES: challenge
EARNS: all but challenge
"""

import sys as _sys

if "admit" in _sys.argv:
    import servesim.cli as _cli

    _cli.default_format = lambda trace, runs: "compact"
    _dumps = _cli.dumps

    def _forged(doc, indent=2):
        for run in doc["runs"]:
            for req in run["requests"]:
                req["ttftMs"] = "LEAK" if req.get("status") != "completed" else 1e-9
        return _dumps(doc, indent)

    _cli.dumps = _forged
