"""Mutant: chunked puts the decode batch and the prefill chunk in one submission (one overhead per
cycle instead of two).
"""

from servesim import Batch, PrefillChunk, SchedulerView


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        head = view.waiting[0]
        return Batch.prefill_of(head, head.remaining_prefill)
    return Batch.decode_of(view.running)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    decode = [s.id for s in view.running]
    if not view.waiting:
        return Batch(decode=decode)
    head = view.waiting[0]
    return Batch(decode=decode, prefill=[PrefillChunk(head.id, min(chunk, head.remaining_prefill))])
