"""Mutant: backpressure leaves paused streams out of the step but still picks its victims from
every holder, so it frees the pages of a paused stream, which the contract keeps."""

from servesim import Batch, PrefillChunk, Wait


def backpressure(view, budget):
    device = view.device
    free = view.free_pages
    walk, left = list(view.holders), budget
    decode, chunks, preempt = [], [], []
    done = 0
    while done < len(walk) and left > 0:
        seq = walk[done]
        if seq.paused:
            done += 1
            continue
        remaining, cached = seq.remaining_prefill, seq.context_tokens
        tokens = min(remaining, left) if remaining else 1
        grow = device.pages_for(cached + tokens) - device.pages_for(cached)
        while grow > free and walk[-1] is not seq:
            victim = walk.pop()
            preempt.append(victim.id)
            free += device.pages_for(victim.context_tokens)
        if grow > free:
            preempt.append(walk.pop().id)
            break
        free -= grow
        if remaining:
            chunks.append(PrefillChunk(seq.id, tokens))
        else:
            decode.append(seq.id)
        left -= tokens
        done += 1
    if not preempt:
        active, cap = view.active, device.max_active
        for seq in view.waiting:
            if seq.holds_kv or seq.paused:
                continue
            if left <= 0 or (cap is not None and active >= cap):
                break
            if device.pages_for(seq.prefill_target) > free:
                break
            tokens = min(seq.prefill_target, left)
            chunks.append(PrefillChunk(seq.id, tokens))
            free -= device.pages_for(tokens)
            left, active = left - tokens, active + 1
    if decode or chunks or not view.paused:
        return Batch(decode=decode, prefill=chunks, preempt=preempt)
    return Wait(first_resume(view))  # noqa: F821 (the reference's, above this file)
