"""Mutant: fcfs puts every waiting prompt in one submission, so the overhead is charged once for
all of them instead of once per request.
"""

from servesim import Batch, PrefillChunk, SchedulerView


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        return Batch(prefill=[PrefillChunk(s.id, s.remaining_prefill) for s in view.waiting])
    return Batch.decode_of(view.running)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    decoded_last = view.previous is not None and bool(view.previous.decode)
    if view.running and (not decoded_last or not view.waiting):
        return Batch.decode_of(view.running)
    head = view.waiting[0]
    return Batch.prefill_of(head, min(chunk, head.remaining_prefill))
