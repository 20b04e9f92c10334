"""Mutant: chunked splits a prompt into equal chunks with `/`, so a chunk's token count is a
float.
"""

from servesim import Batch, PrefillChunk, SchedulerView


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
    parts = -(-head.remaining_prefill // chunk)  # chunks the prompt still needs
    return Batch(prefill=[PrefillChunk(head.id, head.remaining_prefill / parts)])
