"""Mutant: a decode batch holds only the oldest running request instead of all of them."""

from servesim import Batch, PrefillChunk, SchedulerView  # noqa: F401


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        head = view.waiting[0]
        return Batch.prefill_of(head, head.remaining_prefill)
    return Batch.decode_of(view.running[:1])


def chunked(view: SchedulerView, chunk: int) -> Batch:
    decoded_last = view.previous is not None and bool(view.previous.decode)
    if view.running and (not decoded_last or not view.waiting):
        return Batch.decode_of(view.running[:1])
    head = view.waiting[0]
    return Batch.prefill_of(head, min(chunk, head.remaining_prefill))
