"""Mutant: cancel_aware keeps its own queue of arrived requests in view.memo and starts them
from there, so a request cancelled while it waited is scheduled after it has left."""

from servesim import Batch, PrefillChunk, SchedulerView


def cancel_aware(view: SchedulerView, budget: int) -> Batch:
    queue = view.memo.setdefault("queue", {})  # id -> sequence, in arrival order
    for seq in view.waiting:
        if not seq.holds_kv:
            queue.setdefault(seq.id, seq)
    device = view.device
    free = view.free_pages if device.kv_pages is not None else None
    decode = [s.id for s in view.running]
    left = budget - len(decode)
    chunks = [PrefillChunk(s.id, min(s.remaining_prefill, left)) for s in view.waiting
              if s.holds_kv and left > 0]  # fmt: skip
    left -= sum(c.tokens for c in chunks)
    active = view.active
    for rid, seq in list(queue.items()):
        if left <= 0 or (device.max_active is not None and active >= device.max_active):
            break
        if free is not None and device.pages_for(seq.prefill_target) > free:
            break
        tokens = min(seq.prefill_target, left)
        chunks.append(PrefillChunk(rid, tokens))
        del queue[rid]
        if free is not None:
            free -= device.pages_for(tokens)
        left, active = left - tokens, active + 1
    return Batch(decode=decode, prefill=chunks)
