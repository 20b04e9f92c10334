"""Mutant: continuous batching admits only one waiting request per step, even with more free
slots.
"""

from servesim import Batch


def continuous(view):
    free = view.free_slots
    if view.waiting and (free is None or free > 0):
        return whole_prompts(view.waiting[:1])  # noqa: F821
    return Batch.decode_of(view.running)
