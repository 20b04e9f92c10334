"""Finding 4 of issue 20: every run file is schema-valid and under the size cap, but its first
event decodes one request as many times as the cap allows. The replay kept one message per
entry, each quoting the whole event: the parent's memory grew with the square of the count.

The run declares more decode entries than its trace allows and is refused before the schema or
the replay sees it, in time linear in the file.

EARNS: none
"""

import json
import sys

import servesim.cli as _cli
from servesim import Batch, SchedulerView
from servesim.compact import expand_document as _full

_dumps = _cli.dumps


def _bloated(doc, indent=2):
    doc = _full(doc)  # the grader asks for a compact file: this one is written in full
    work = sum(1 + r["inputTokens"] + r["outputTokens"] for r in doc["trace"]["requests"])
    room = 64 * 1024 + 1024 * work - len(_dumps(doc, indent=None)) - 4096
    run = doc["runs"][0]
    first = run["requests"][0]["id"]
    run["events"][0]["decode"] = [first] * max(1, room // (len(json.dumps(first)) + 2))
    return _dumps(doc, indent=None)


if "--output" in sys.argv:
    _cli.dumps = _bloated


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        head = view.waiting[0]
        return Batch.prefill_of(head, head.remaining_prefill)
    return Batch.decode_of(view.running)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    return fcfs(view)  # a valid schedule is all the engine needs to write a run file
