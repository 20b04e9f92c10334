"""Finding 5 of issue 20: correct policies that sleep, before simulating, in proportion to the
trace's number of requests and to its first prompt, so that the per-case times of a report
would read the hidden traces' sizes back.

Student views show no time for a hidden case and no total time: nothing to read back.

EARNS: all
"""

import json
import sys
import time

from servesim import Batch, SchedulerView

if "--trace" in sys.argv:
    with open(sys.argv[sys.argv.index("--trace") + 1], encoding="utf-8") as _handle:
        _requests = json.load(_handle)["requests"]
    time.sleep(0.01 * len(_requests) + 0.002 * _requests[0]["inputTokens"])


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        head = view.waiting[0]
        return Batch.prefill_of(head, head.remaining_prefill)
    return Batch.decode_of(view.running)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    decoded_last = view.previous is not None and bool(view.previous.decode)
    if view.running and (not decoded_last or not view.waiting):
        return Batch.decode_of(view.running)
    head = view.waiting[0]
    return Batch.prefill_of(head, min(chunk, head.remaining_prefill))
