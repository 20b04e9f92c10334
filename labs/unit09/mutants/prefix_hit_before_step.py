"""Mutant: prefix_paged takes each hit from the cache as it was before the step
(view.prefix_hit(seq) without after=), missing the pages an earlier start of the same step
fills."""

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
            hit = min(view.prefix_hit(seq), pool.hit_tokens(seq.id, target))
            tokens = min(target - hit, left)
            pool.apply_step([], [], [Start(seq.id, hit, tokens, target)])
            chunks.append(PrefillChunk(seq.id, tokens, hit))
            left, active = left - tokens, active + 1
    return Batch(decode=decode, prefill=chunks, preempt=preempt)
