"""Mutant: budgeted reserves the pages of the real output (outputTokens), not the declared
maximum.
"""

from servesim import Batch, PrefillChunk, SchedulerView  # noqa: F401


def budgeted(view, budget):
    device = view.device
    decode = [s.id for s in view.running]
    left = budget - len(decode)
    active = view.active
    holders = [s for s in view.running] + [s for s in view.waiting if s.holds_kv]
    reserved = sum(device.pages_for(s.input_tokens + s.output_tokens) for s in holders)
    chunks = []
    for seq in view.waiting:
        if left <= 0:
            break
        if not seq.holds_kv:
            if device.max_active is not None and active >= device.max_active:
                break
            pages = device.pages_for(seq.input_tokens + seq.output_tokens)
            if device.kv_pages is not None and reserved + pages > device.kv_pages:
                break
            active, reserved = active + 1, reserved + pages
        tokens = min(left, seq.remaining_prefill)
        chunks.append(PrefillChunk(seq.id, tokens))
        left -= tokens
    return Batch(decode=decode, prefill=chunks)
