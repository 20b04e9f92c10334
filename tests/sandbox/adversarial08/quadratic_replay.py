"""Finding 4 (issue 20): a schema-valid run file under the size cap whose first event decodes one
request K times (K as large as the cap allows): the replay kept one message per entry, each
quoting the whole event, so the parent's memory grew with K squared.

The run declares more decode entries than its trace allows and is refused before the schema
or the replay sees it, in linear time.

APPENDS-TO: policies.py
CASES: static-burst challenge-deadlines budgeted-deadlines-b128
EARNS: none
"""

import json as _json
import sys as _sys

import servesim.cli as _cli
from servesim.compact import expand_document as _full

_dumps = _cli.dumps


def _cap(doc) -> int:
    work = sum(1 + r["inputTokens"] + r["outputTokens"] for r in doc["trace"]["requests"])
    return min(16 << 20, 64 * 1024 + 1024 * work)


def _bloated(doc, indent=2):
    doc = _full(doc)  # the grader asks for a compact file: this one is written in full
    text = _dumps(doc, indent=None)
    run = doc["runs"][0]
    room = _cap(doc) - len(text) - 4096
    first = run["requests"][0]["id"]
    run["events"][0]["decode"] = [first] * max(1, room // (len(_json.dumps(first)) + 2))
    return _dumps(doc, indent=None)


if "--output" in _sys.argv:
    _cli.dumps = _bloated
