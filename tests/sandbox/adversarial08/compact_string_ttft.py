"""Finding 2 (issue 20): a compact run whose rejected (and every other) request carries a
non-numeric TTFT: the leaderboard's p99 became a string and the report crashed the grader.

Now the schema rejects the run file, the challenge earns nothing, and the report renders.

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
            columns = run["requests"]  # compact: the requests as columns
            columns["ttftMs"] = [
                "LEAK" if status != "completed" else 1e-9 for status in columns["status"]
            ]
        return _dumps(doc, indent)

    _cli.dumps = _forged
