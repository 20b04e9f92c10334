"""Unit 08 (static, continuous, budgeted), written from the handout: the submission that
another student copies (the test renames its variables and reorders its functions)."""

from servesim import Batch, PrefillChunk, Wait


def static(view, bucket=0, wait_ms=0):
    if view.running:
        return Batch.decode_of(view.running)
    max_k = view.device.max_active
    by_bucket = {}
    for request in view.waiting:
        index = 0
        if bucket > 0:
            index = (request.prefill_target - 1) // bucket
        by_bucket.setdefault(index, []).append(request)
    earliest_ready = []
    for requests in by_bucket.values():
        ready_at = requests[0].arrival_ms + wait_ms
        is_full = max_k is not None and len(requests) >= max_k
        if is_full or view.now_ms >= ready_at:
            launch = requests[:max_k] if max_k is not None else requests
            chunks = [PrefillChunk(r.id, r.remaining_prefill) for r in launch]
            return Batch(prefill=chunks)
        earliest_ready.append(ready_at)
    return Wait(min(earliest_ready))


def continuous(view):
    open_slots = view.free_slots
    if view.waiting and (open_slots is None or open_slots > 0):
        newcomers = list(view.waiting)
        if open_slots is not None:
            newcomers = newcomers[:open_slots]
        chunks = [PrefillChunk(r.id, r.remaining_prefill) for r in newcomers]
        return Batch(prefill=chunks)
    return Batch.decode_of(view.running)


def budgeted(view, budget):
    decode_ids = [r.id for r in view.running]
    remaining_budget = budget - len(decode_ids)
    slots_used = view.active
    page_limit = view.device.kv_pages
    pages_used = 0 if page_limit is None else view.pages_reserved
    chunks = []
    for request in view.waiting:
        if remaining_budget <= 0:
            break
        if not request.holds_kv:
            max_k = view.device.max_active
            if max_k is not None and slots_used >= max_k:
                break
            needed_pages = view.device.pages_for(request.reservation_tokens)
            if page_limit is not None and pages_used + needed_pages > page_limit:
                break
            slots_used += 1
            pages_used += needed_pages
        size = min(remaining_budget, request.remaining_prefill)
        chunks.append(PrefillChunk(request.id, size))
        remaining_budget -= size
    return Batch(decode=decode_ids, prefill=chunks)
