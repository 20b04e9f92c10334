"""Mutant: prefix_admit counts every hit page as free of cost, also the cached pages no one
holds (they leave the free queue when taken): it admits past the pool."""

import contextlib

from servesim import Batch, PrefillChunk, SchedulerView
from servesim.prefixcache import Start


def prefix_admit(view: SchedulerView, budget: int) -> Batch:
    pool, device, cap = pool_copy(view), view.device, view.device.max_active  # noqa: F821
    decode, chunks, preempt, left = grow_holders(view, pool, budget)  # noqa: F821
    if not preempt:
        active = view.active
        for seq in view.waiting:
            if seq.holds_kv:
                continue
            if left <= 0 or (cap is not None and active >= cap):
                break
            target = seq.prefill_target
            hit = pool.hit_tokens(seq.id, target)
            if device.pages_for(target) - hit // device.page_tokens > pool.free:
                break
            tokens = min(target - hit, left)
            with contextlib.suppress(ValueError):  # the copy refuses it; the engine gets it
                pool.apply_step([], [], [Start(seq.id, hit, tokens, target)])
            chunks.append(PrefillChunk(seq.id, tokens, hit))
            left, active = left - tokens, active + 1
    return Batch(decode=decode, prefill=chunks, preempt=preempt)
