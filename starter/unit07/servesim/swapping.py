"""Swap as the alternative to recompute (31.6): a given policy wrapper, not a graded part.

``swap_long(policy, min_tokens)`` runs ``policy`` and then changes how its victims are
preempted: a running victim whose cache holds at least ``min_tokens`` positions is swapped out
to the device's host pool (its pages move there; it keeps them and its tokens) instead of being
recomputed, when the host pool has room for it. A shorter victim, a partial prefill or one the
host pool cannot take is recomputed as ``policy`` asked. In a step where nobody is preempted
or swapped out, the sequence swapped out first comes back (swapped in and decoded in the same
step) if the batch still fits with it; otherwise it waits for a later step.

The transfer costs pages x ``swapMsPerPage`` plus ``swapSyncMs`` per sequence, each way, so a
swap pays off only for long enough caches: recomputing c positions costs about c x
``prefillMsPerToken``. Section 31.6 of the lesson works out where the two meet
(``python3 exercises.py 31.6``). ``paged`` itself stays vLLM V1's scheduler, which only
recomputes.
"""

from __future__ import annotations

from dataclasses import replace

from .batch import Batch
from .sequence import Phase
from .view import SchedulerView


def swap_long(policy, min_tokens: int):
    """``policy`` with victims of at least ``min_tokens`` cached positions swapped, not
    recomputed (see the module docstring); the result is a policy like any other."""

    def swapping(view: SchedulerView, *args, **kwargs) -> Batch:
        batch = policy(view, *args, **kwargs)
        room = view.free_host_pages
        recompute, swap_out = [], []
        for rid in batch.preempt:
            seq = view.sequence(rid)
            pages = view.device.pages_for(seq.context_tokens)
            long_enough = seq.context_tokens >= min_tokens and seq.phase is Phase.DECODE
            if long_enough and pages <= room:
                swap_out.append(rid)
                room -= pages
            else:
                recompute.append(rid)
        batch = replace(batch, preempt=recompute, swap_out=swap_out)
        if batch.preempt or batch.swap_out or not view.swapped:
            return batch
        back = view.swapped[0].id
        resumed = replace(batch, swap_in=(back,), decode=(*batch.decode, back))
        return resumed if view.fits(resumed) else batch

    swapping.__name__ = f"swap_long({getattr(policy, '__name__', 'policy')}, {min_tokens})"
    return swapping
