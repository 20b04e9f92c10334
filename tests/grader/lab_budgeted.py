"""A plain lab-engine ``budgeted`` policy, written straight from the unit 08 design.

It stands in for the reference ``solutions/unit08/policies.py`` where that is not available,
so the fast path's budgeted planner is checked against the lab engine either way. It scans the
whole view at every step (clarity over speed), which is fine for the test traces.
"""

from __future__ import annotations

from servesim import Batch, PrefillChunk


def budgeted(view, budget: int) -> Batch:
    """Decode every running sequence, then FIFO prefill chunks in the rest of ``budget``.

    A request that has not started starts only while the active cap K allows and, with a KV
    page pool, while the pages of its declared maximum fit beside the holders' reservations;
    the first one that cannot start ends the fill (no overtaking).
    """
    device = view.device
    holders = [*view.running, *(s for s in view.waiting if s.prefilled)]
    reserved = sum(device.pages_for(s.input_tokens + s.output_tokens) for s in holders)
    active, left, chunks = len(holders), budget - len(view.running), []
    for seq in view.waiting:
        if left <= 0:
            break
        if not seq.prefilled:
            need = device.pages_for(seq.input_tokens + seq.output_tokens)
            if device.max_active is not None and active >= device.max_active:
                break
            if device.kv_pages is not None and reserved + need > device.kv_pages:
                break
            active, reserved = active + 1, reserved + need
        tokens = min(left, seq.remaining_prefill)
        chunks.append(PrefillChunk(seq.id, tokens))
        left -= tokens
    return Batch(decode=[s.id for s in view.running], prefill=chunks)
