"""Mutant: paged names a step's victims oldest first, so the engine's prepends leave the newest
victim at the front of the waiting queue instead of the oldest.
"""

from dataclasses import replace

_paged = paged  # noqa: F821


def paged(view, budget):
    batch = _paged(view, budget)
    return replace(batch, preempt=batch.preempt[::-1])
