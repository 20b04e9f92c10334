"""Finding 10: fcfs never returns; chunked is correct.

The first fcfs case stops at its CPU share; the other fcfs cases get the same verdict without
running, so the whole submission takes about one CPU share, not one per case.

EARNS: chunked
"""

from servesim import Batch, SchedulerView


def fcfs(view: SchedulerView) -> Batch:
    while True:
        pass


def chunked(view: SchedulerView, chunk: int) -> Batch:
    last_was_decode = view.previous is not None and bool(view.previous.decode)
    if view.running and not (last_was_decode and view.waiting):
        return Batch.decode_of(view.running)
    first = view.waiting[0]
    return Batch.prefill_of(first, min(chunk, first.remaining_prefill))
