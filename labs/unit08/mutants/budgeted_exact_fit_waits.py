"""Mutant: budgeted keeps a request waiting when its reservation fills M to the last page (an
off-by-one on the M check: ``reserved + pages >= M`` instead of ``> M``)."""


def budgeted(view, budget):
    device = view.device
    decode = [s.id for s in view.running]
    left = budget - len(decode)
    pool = device.kv_pages
    active, reserved = view.active, (view.pages_reserved if pool is not None else 0)
    chunks = []
    for seq in view.waiting:
        if left <= 0:
            break
        if not seq.holds_kv:
            if device.max_active is not None and active >= device.max_active:
                break
            pages = device.pages_for(seq.reservation_tokens)
            if pool is not None and reserved + pages >= pool:
                break
            active, reserved = active + 1, reserved + pages
        tokens = min(left, seq.remaining_prefill)
        chunks.append(PrefillChunk(seq.id, tokens))  # noqa: F821
        left -= tokens
    return Batch(decode=decode, prefill=chunks)  # noqa: F821
