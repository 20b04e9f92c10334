"""Mutant: paged sets aside the pages of a partial prefill's whole prompt (and of a starting
request's whole prompt) instead of allocating only each step's chunk.
"""

from servesim import Batch, PrefillChunk, SchedulerView


def paged(view: SchedulerView, budget: int) -> Batch:
    device, pool = view.device, view.device.kv_pages

    def held(seq):  # a partial prefill counts as holding its whole prompt already
        return device.pages_for(seq.prefill_target if seq.remaining_prefill else seq.context_tokens)

    walk, left = list(view.holders), budget
    free = pool - sum(held(s) for s in walk) if pool is not None else 0
    decode, chunks, preempt = [], [], []
    done = 0
    while done < len(walk) and left > 0:
        seq = walk[done]
        tokens = min(seq.remaining_prefill, left) if seq.remaining_prefill else 1
        grow = 0 if seq.remaining_prefill else device.pages_for(seq.context_tokens + 1) - held(seq)
        while pool is not None and grow > free and walk[-1] is not seq:
            victim = walk.pop()
            preempt.append(victim.id)
            free += held(victim)
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
            free -= device.pages_for(seq.prefill_target)
            left, active = left - tokens, active + 1
    return Batch(decode=decode, prefill=chunks, preempt=preempt)
