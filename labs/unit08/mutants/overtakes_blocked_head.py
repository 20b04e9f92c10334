"""Mutant: budgeted skips a request whose reservation does not fit (or that K blocks) and lets
later ones start.
"""

from servesim import Batch, PrefillChunk, SchedulerView  # noqa: F401


def budgeted(view, budget):
    device = view.device
    decode = [s.id for s in view.running]
    left = budget - len(decode)
    active, reserved = view.active, view.pages_reserved
    chunks = []
    for seq in view.waiting:
        if left <= 0:
            break
        if not seq.holds_kv:
            if device.max_active is not None and active >= device.max_active:
                continue
            pages = device.pages_for(seq.reservation_tokens)
            if device.kv_pages is not None and reserved + pages > device.kv_pages:
                continue
            active, reserved = active + 1, reserved + pages
        tokens = min(left, seq.remaining_prefill)
        chunks.append(PrefillChunk(seq.id, tokens))
        left -= tokens
    return Batch(decode=decode, prefill=chunks)
