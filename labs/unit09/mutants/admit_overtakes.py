"""Mutant: prefix_admit skips a waiting request whose pages do not fit and starts later ones
(overtaking), where vLLM's FCFS walk stops."""

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
            hit, refs = pool.hit_tokens(seq.id, target), pool.hit_refs(seq.id, target)
            if device.pages_for(target) - len(refs) + refs.count(0) > pool.free:
                continue
            tokens = min(target - hit, left)
            pool.apply_step([], [], [Start(seq.id, hit, tokens, target)])
            chunks.append(PrefillChunk(seq.id, tokens, hit))
            left, active = left - tokens, active + 1
    return Batch(decode=decode, prefill=chunks, preempt=preempt)
