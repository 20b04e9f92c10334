"""Unit 08 (static, continuous, budgeted), written from the handout: buckets found by a scan
of distinct keys, the budget spent in a while loop."""

from policies import whole_prompts
from servesim import Batch, PrefillChunk, Wait


def static(view, bucket=0, wait_ms=0):
    if view.running:
        return Batch.decode_of(view.running)
    queue = list(view.waiting)
    keys = [(s.prefill_target - 1) // bucket if bucket else 0 for s in queue]
    firsts = sorted({key: keys.index(key) for key in keys}.items(), key=lambda kv: kv[1])
    cap = view.device.max_active
    times = []
    for key, first in firsts:
        same = [queue[i] for i in range(first, len(queue)) if keys[i] == key]
        start = same[0].arrival_ms + wait_ms
        times.append(start)
        full = cap is not None and len(same) >= cap
        if full or start <= view.now_ms:
            return whole_prompts(same[:cap] if cap is not None else same)
    return Wait(min(times))


def continuous(view):
    free = view.free_slots
    can_admit = free is None or free >= 1
    if not (view.waiting and can_admit):
        return Batch.decode_of(view.running)
    batch = view.waiting if free is None else view.waiting[0:free]
    return whole_prompts(batch)


def budgeted(view, budget):
    dev = view.device
    decodes = tuple(seq.id for seq in view.running)
    tokens_left = budget - len(decodes)
    holding = view.active
    reserved = 0 if dev.kv_pages is None else view.pages_reserved
    out = []
    queue = list(view.waiting)
    i = 0
    while i < len(queue) and tokens_left > 0:
        seq = queue[i]
        if not seq.holds_kv:
            extra = dev.pages_for(seq.reservation_tokens)
            over_k = dev.max_active is not None and holding + 1 > dev.max_active
            over_m = dev.kv_pages is not None and reserved + extra > dev.kv_pages
            if over_k or over_m:
                break
            holding, reserved = holding + 1, reserved + extra
        take = seq.remaining_prefill if seq.remaining_prefill < tokens_left else tokens_left
        out.append(PrefillChunk(seq.id, take))
        tokens_left -= take
        i += 1
    return Batch(decode=decodes, prefill=out)
