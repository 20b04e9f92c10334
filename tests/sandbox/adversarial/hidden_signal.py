"""Finding 8: tries to make student-facing output reveal hidden cases.

fcfs is correct. chunked is correct on the public traces, but on any other trace it raises an
exception that names the trace and its request ids (that must never reach a student) and,
from its second request on, returns a wrong batch order so that fractional partial credit
would tell how many requests matched. Hidden cases are shown with opaque names, coarse
feedback and coarse credit.

EARNS: replay
"""

import json
import sys

from servesim import Batch, SchedulerView

PUBLIC = {"mixed", "prefill-only", "unseen"}
_trace = sys.argv[sys.argv.index("--trace") + 1]
with open(_trace, encoding="utf-8") as _handle:
    _doc = json.load(_handle)
_public = _doc["name"] in PUBLIC
print(f"LEAK:{_doc['name']}")


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        first = view.waiting[0]
        return Batch.prefill_of(first, first.remaining_prefill)
    return Batch.decode_of(view.running)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    if not _public and len(_doc["requests"]) > 40:
        ids = [r["id"] for r in _doc["requests"]]
        raise ValueError(f"LEAK:{_doc['name']} {ids}")
    last_was_decode = view.previous is not None and bool(view.previous.decode)
    if view.running and not (last_was_decode and view.waiting):
        return Batch.decode_of(view.running)
    first = view.waiting[-1] if not _public and len(view.waiting) > 1 else view.waiting[0]
    return Batch.prefill_of(first, min(chunk, first.remaining_prefill))
