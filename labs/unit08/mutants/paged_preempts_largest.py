"""Mutant: paged preempts the holder with the largest context (the most pages freed at once),
not the most recently admitted one.
"""

from servesim import Batch, PrefillChunk, SchedulerView


def paged(view: SchedulerView, budget: int) -> Batch:
    device, pool = view.device, view.device.kv_pages
    free = pool - view.pages_held if pool is not None else 0
    walk, left = list(view.holders), budget
    decode, chunks, preempt = [], [], []
    done = 0
    while done < len(walk) and left > 0:
        seq = walk[done]
        tokens = min(seq.remaining_prefill, left) if seq.remaining_prefill else 1
        grow = device.pages_for(seq.context_tokens + tokens) - device.pages_for(seq.context_tokens)
        while pool is not None and grow > free and walk[-1] is not seq:
            later = walk[done + 1 :]
            largest = max(later, key=lambda s: s.context_tokens)
            victim = walk.pop(walk.index(largest))
            preempt.append(victim.id)
            free += device.pages_for(victim.context_tokens)
        if pool is not None and grow > free:
            preempt.append(walk.pop().id)
            break
        free -= grow
        if seq.remaining_prefill:
            chunks.append(PrefillChunk(seq.id, tokens))
        else:
            decode.append(seq.id)
        left -= tokens
        done += 1
    if not preempt:
        active, cap = view.active, device.max_active
        for seq in view.waiting:
            if seq.holds_kv:
                continue
            if left <= 0 or (cap is not None and active >= cap):
                break
            if pool is not None and device.pages_for(seq.prefill_target) > free:
                break
            tokens = min(seq.prefill_target, left)
            chunks.append(PrefillChunk(seq.id, tokens))
            free -= device.pages_for(tokens)
            left, active = left - tokens, active + 1
    return Batch(decode=decode, prefill=chunks, preempt=preempt)
