"""Mutant: chunked counts the tokens it hands out on the sequence itself (`head.prefilled +=`),
changing the engine's state through its view.
"""

from servesim import Batch, PrefillChunk, SchedulerView  # noqa: F401


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
    tokens = min(chunk, head.remaining_prefill)
    head.prefilled += tokens
    return Batch.prefill_of(head, tokens)
