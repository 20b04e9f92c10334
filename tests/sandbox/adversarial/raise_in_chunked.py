"""A correct fcfs, and a chunked that raises: fcfs earns its points, chunked none.

EARNS: fcfs
"""

from servesim import Batch, SchedulerView


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        first = view.waiting[0]
        return Batch.prefill_of(first, first.remaining_prefill)
    return Batch.decode_of(view.running)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    raise ValueError("chunked scheduling is hard")
