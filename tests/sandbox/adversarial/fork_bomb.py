"""A bounded fork bomb at import (children that sleep forever), then honest, correct policies.

The process limit stops the forking, the grader must clean up every child, and the correct
policies still earn their points.

EARNS: all
"""

import os
import time

from servesim import Batch, SchedulerView

_children = 0
for _ in range(400):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        try:
            time.sleep(3600)
        finally:
            os._exit(0)
    _children += 1
print(f"forked {_children} children as uid {os.getuid()}")


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        first = view.waiting[0]
        return Batch.prefill_of(first, first.remaining_prefill)
    return Batch.decode_of(view.running)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    last_was_decode = view.previous is not None and bool(view.previous.decode)
    if view.running and not (last_was_decode and view.waiting):
        return Batch.decode_of(view.running)
    first = view.waiting[0]
    return Batch.prefill_of(first, min(chunk, first.remaining_prefill))
