"""Mutant: continuous batching refills free slots only when nobody is running (decode has
priority).
"""

from servesim import Batch


def continuous(view):
    free = view.free_slots
    if view.running:
        return Batch.decode_of(view.running)
    return whole_prompts(view.waiting if free is None else view.waiting[:free])  # noqa: F821
