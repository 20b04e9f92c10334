"""Mutant: static batching decodes every member of its group until the whole group is done, even
members that already have all their tokens (the engine refuses to decode a finished sequence).
"""


def static(view, bucket=0, wait_ms=0):
    group = view.memo.setdefault("group", [])
    if view.running:
        return Batch(decode=list(group))  # noqa: F821
    cap = view.device.max_active
    chosen = view.waiting if cap is None else view.waiting[:cap]
    group[:] = [s.id for s in chosen]
    return whole_prompts(chosen)  # noqa: F821
