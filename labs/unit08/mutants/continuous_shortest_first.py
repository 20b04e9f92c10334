"""Mutant: continuous batching fills free slots with the shortest waiting prompts first, not in
arrival order.
"""


def continuous(view):
    free = view.free_slots
    if view.waiting and (free is None or free > 0):
        shortest = sorted(view.waiting, key=lambda s: s.remaining_prefill)
        return whole_prompts(shortest if free is None else shortest[:free])  # noqa: F821
    return Batch.decode_of(view.running)  # noqa: F821
