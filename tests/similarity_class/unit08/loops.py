"""Unit 08 (static, continuous, budgeted), written from the handout: explicit loops, the
bucket order kept in a list beside a dict of members."""

from servesim import Batch, PrefillChunk, Wait


def static(view, bucket=0, wait_ms=0):
    if len(view.running) > 0:
        return Batch.decode_of(view.running)
    order = []
    members = {}
    for seq in view.waiting:
        key = 0 if bucket == 0 else (seq.prefill_target - 1) // bucket
        if key not in members:
            members[key] = []
            order.append(key)
        members[key].append(seq)
    k = view.device.max_active
    soonest = None
    for key in order:
        group = members[key]
        opens_at = group[0].arrival_ms + wait_ms
        if (k is not None and len(group) >= k) or view.now_ms >= opens_at:
            chosen = group if k is None else group[:k]
            return Batch(prefill=[PrefillChunk(s.id, s.remaining_prefill) for s in chosen])
        if soonest is None or opens_at < soonest:
            soonest = opens_at
    return Wait(soonest)


def continuous(view):
    slots = view.free_slots
    if len(view.waiting) == 0 or slots == 0:
        return Batch.decode_of(view.running)
    admitted = list(view.waiting)
    if slots is not None:
        admitted = admitted[:slots]
    return Batch(prefill=[PrefillChunk(s.id, s.remaining_prefill) for s in admitted])


def budgeted(view, budget):
    running_ids = [s.id for s in view.running]
    room = budget - len(running_ids)
    k = view.device.max_active
    m = view.device.kv_pages
    holders = view.active
    pages_taken = view.pages_reserved if m is not None else 0
    pieces = []
    for seq in view.waiting:
        if room <= 0:
            break
        if not seq.holds_kv:
            need = view.device.pages_for(seq.reservation_tokens)
            if k is not None and holders >= k:
                break
            if m is not None and pages_taken + need > m:
                break
            holders += 1
            pages_taken += need
        n = min(room, seq.remaining_prefill)
        pieces.append(PrefillChunk(seq.id, n))
        room -= n
    return Batch(decode=running_ids, prefill=pieces)
