"""A reference backpressure policy for the streaming tests (unit 09): unit 08's ``paged``
(vLLM V1's scheduler, pages on demand, lazy recompute preemption) that leaves paused streams
out. The lead moves it into solutions/unit09 once the unit has its folder."""

from __future__ import annotations

from servesim import Batch, PrefillChunk, Wait


def backpressure(view, budget: int = 512) -> Batch | Wait:
    """``paged`` over the streams that may run: a paused stream (``view.paused``,
    ``seq.paused``) keeps its KV pages and its place but gets no tokens and is never chosen as
    a victim; a waiting request that is paused (preempted while paused) is not started. When
    nothing else can run (a step would only preempt: the pages it lacks are held by paused
    streams), preempt nobody and wait until the first paused stream drains to the low mark
    (the engine also stops the clock there, and at a pause deadline, which frees pages).

    1. Walk the holders that are not paused, in (re)admission order, while budget is left: a
       running one asks for 1 token, a partial prefill for its next chunk; while the pages it
       needs exceed the free ones, preempt the last holder of the walk (itself, last).
    2. If nobody was preempted, start waiting requests that hold no KV and are not paused, in
       queue order, while budget, K and the free pages allow.
    """
    device, pool = view.device, view.device.kv_pages
    free = pool - view.pages_held if pool is not None else 0
    walk, left = [s for s in view.holders if not s.paused], budget
    decode, chunks, preempt = [], [], []
    done = 0
    while done < len(walk) and left > 0:
        seq = walk[done]
        remaining, cached = seq.remaining_prefill, seq.context_tokens
        tokens = min(remaining, left) if remaining else 1
        grow = device.pages_for(cached + tokens) - device.pages_for(cached)
        while pool is not None and grow > free and walk[-1] is not seq:
            victim = walk.pop()
            preempt.append(victim.id)
            free += device.pages_for(victim.context_tokens)
        if pool is not None and grow > free:
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
            if pool is not None and device.pages_for(seq.prefill_target) > free:
                break
            tokens = min(seq.prefill_target, left)
            chunks.append(PrefillChunk(seq.id, tokens))
            free -= device.pages_for(tokens)
            left, active = left - tokens, active + 1
    if decode or chunks or not view.paused:
        return Batch(decode=decode, prefill=chunks, preempt=preempt)
    return Wait(first_resume(view))  # the pages it lacks are held by paused streams


def first_resume(view) -> float:
    """When the first paused stream's buffer drains to the low mark (from its level now and
    its client's read rate)."""
    low = view.device.stream_low_mark_bytes
    return min(
        view.now_ms + (view.buffer_bytes(s) - low) * 1000.0 / s.read_bytes_per_s
        for s in view.paused
    )
