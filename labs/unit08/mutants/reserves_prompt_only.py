"""Mutant: budgeted reserves only the prompt's pages, as if outputs took no KV (it can overflow
M).
"""

from servesim import Batch, PrefillChunk, SchedulerView  # noqa: F401


def budgeted(view, budget):
    device = view.device
    decode = [s.id for s in view.running]
    left = budget - len(decode)
    active, held = view.active, view.pages_held
    chunks = []
    for seq in view.waiting:
        if left <= 0:
            break
        if not seq.holds_kv:
            if device.max_active is not None and active >= device.max_active:
                break
            pages = device.pages_for(seq.input_tokens)
            if device.kv_pages is not None and held + pages > device.kv_pages:
                break
            active, held = active + 1, held + pages
        tokens = min(left, seq.remaining_prefill)
        chunks.append(PrefillChunk(seq.id, tokens))
        left -= tokens
    return Batch(decode=decode, prefill=chunks)
