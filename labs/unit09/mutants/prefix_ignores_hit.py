"""Mutant: prefix_paged never claims the prefix hit: every start computes its whole prompt."""

from servesim import Batch, PrefillChunk, SchedulerView
from servesim.prefixcache import Start


def prefix_paged(view: SchedulerView, budget: int) -> Batch:
    pool, cap = pool_copy(view), view.device.max_active  # noqa: F821
    decode, chunks, preempt, left = grow_holders(view, pool, budget)  # noqa: F821
    if not preempt:
        active = view.active
        for seq in view.waiting:
            if seq.holds_kv:
                continue
            if left <= 0 or (cap is not None and active >= cap):
                break
            target = seq.prefill_target
            if view.device.pages_for(target) > pool.free:
                break
            tokens = min(target, left)
            pool.apply_step([], [], [Start(seq.id, 0, tokens, target)])
            chunks.append(PrefillChunk(seq.id, tokens))
            left, active = left - tokens, active + 1
    return Batch(decode=decode, prefill=chunks, preempt=preempt)
