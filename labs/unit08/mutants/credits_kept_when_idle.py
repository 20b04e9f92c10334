"""Mutant: fair keeps a tenant's credits while it has nothing waiting instead of resetting them to
0.
"""

from servesim import Batch, PrefillChunk, SchedulerView


def fair(view: SchedulerView, budget: int, quantum: int, weights=None) -> Batch:
    device, memo = view.device, view.memo
    credits = memo.setdefault("credits", {})
    queues: dict[str, list] = {}
    for seq in view.waiting:
        queues.setdefault(seq.tenant, []).append(seq)
    for tenant in set(credits) | set(queues):
        cap = 4 * (weights or {}).get(tenant, 1) * quantum
        grown = credits.get(tenant, 0) + (weights or {}).get(tenant, 1) * quantum
        credits[tenant] = min(cap, grown) if tenant in queues else credits.get(tenant, 0)
    decode = [s.id for s in view.running]
    left, active, reserved = budget - len(decode), view.active, view.pages_reserved
    order = sorted(queues)
    last = memo.get("last")
    start = next((i for i, t in enumerate(order) if last is not None and t > last), 0)
    order = order[start:] + order[:start]
    taken: dict[str, int] = {}
    chunks, gave = [], True
    while left > 0 and gave:
        gave = False
        for tenant in order:
            queue = queues[tenant]
            while queue and taken.get(queue[0].id, 0) == queue[0].remaining_prefill:
                queue.pop(0)
            if not queue or left <= 0:
                continue
            seq = queue[0]
            tokens = min(left, seq.remaining_prefill - taken.get(seq.id, 0), int(credits[tenant]))
            if tokens < 1:
                continue
            if not seq.holds_kv and seq.id not in taken:
                pages = device.pages_for(seq.reservation_tokens)
                if device.max_active is not None and active >= device.max_active:
                    continue
                if device.kv_pages is not None and reserved + pages > device.kv_pages:
                    continue
                active, reserved = active + 1, reserved + pages
            taken[seq.id] = taken.get(seq.id, 0) + tokens
            credits[tenant] -= tokens
            left -= tokens
            memo["last"], gave = tenant, True
    merged: dict[str, int] = {}
    for seq in view.waiting:
        if seq.id in taken:
            merged[seq.id] = taken[seq.id]
    chunks = [PrefillChunk(rid, n) for rid, n in merged.items()]
    return Batch(decode=decode, prefill=chunks)
