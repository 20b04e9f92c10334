"""Mutant: chunked prefills every waiting chunk before it decodes (chunks without the decode
batches between them), so running requests stall until the prompt queue is empty.
"""

from servesim import Batch, SchedulerView


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        head = view.waiting[0]
        return Batch.prefill_of(head, head.remaining_prefill)
    return Batch.decode_of(view.running)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    if view.waiting:
        head = view.waiting[0]
        return Batch.prefill_of(head, min(chunk, head.remaining_prefill))
    return Batch.decode_of(view.running)
