"""Mutant: fcfs names the request of a prefill chunk by `str(seq)` instead of `seq.id`, an id no
request has.
"""

from servesim import Batch, PrefillChunk, SchedulerView


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        head = view.waiting[0]
        return Batch(prefill=[PrefillChunk(str(head), head.remaining_prefill)])
    return Batch.decode_of(view.running)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    decoded_last = view.previous is not None and bool(view.previous.decode)
    if view.running and (not decoded_last or not view.waiting):
        return Batch.decode_of(view.running)
    head = view.waiting[0]
    return Batch.prefill_of(head, min(chunk, head.remaining_prefill))
