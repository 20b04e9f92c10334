"""Mutant: static batching lets waiting requests join a running group (it is continuous)."""

from servesim import Batch


def static(view, bucket=0, wait_ms=0):
    free = view.free_slots
    if view.waiting and (free is None or free > 0):
        return whole_prompts(view.waiting if free is None else view.waiting[:free])  # noqa: F821
    return Batch.decode_of(view.running)
