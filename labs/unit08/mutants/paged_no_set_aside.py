"""Mutant: paged does not set aside the whole prompt of partial prefills when it counts the pages a
step needs.
"""

from servesim import Batch, PrefillChunk, SchedulerView


def paged(view: SchedulerView, budget: int) -> Batch:
    device = view.device
    running = list(view.running)
    need = sum(device.pages_for(s.context_tokens + 1) for s in running)
    need += sum(device.pages_for(s.prefilled) for s in view.waiting if s.holds_kv)
    preempt = []
    while device.kv_pages is not None and running and need > device.kv_pages:
        victim = max(running, key=lambda s: s.prefill_start)
        running.remove(victim)
        preempt.append(victim.id)
        need -= device.pages_for(victim.context_tokens + 1)
    left = budget - len(running)
    active = view.active - len(preempt)
    chunks = []
    for seq in view.waiting:
        if left <= 0:
            break
        if not seq.holds_kv:
            if device.max_active is not None and active >= device.max_active:
                break
            pages = device.pages_for(seq.prefill_target)
            if device.kv_pages is not None and need + pages > device.kv_pages:
                break
            active, need = active + 1, need + pages
        tokens = min(left, seq.remaining_prefill)
        chunks.append(PrefillChunk(seq.id, tokens))
        left -= tokens
    return Batch(decode=[s.id for s in running], prefill=chunks, preempt=preempt)
