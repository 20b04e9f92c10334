"""Mutant: a decode batch leaves out the request that got its first token in the batch just before
(unless it is the only one running).
"""

from servesim import Batch, PrefillChunk, SchedulerView  # noqa: F401


def _decode(view: SchedulerView) -> Batch:
    newest = {c.id for c in view.previous.prefill} if view.previous else set()
    older = [s for s in view.running if s.id not in newest]
    return Batch.decode_of(older or view.running)


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        head = view.waiting[0]
        return Batch.prefill_of(head, head.remaining_prefill)
    return _decode(view)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    decoded_last = view.previous is not None and bool(view.previous.decode)
    if view.running and (not decoded_last or not view.waiting):
        return _decode(view)
    head = view.waiting[0]
    return Batch.prefill_of(head, min(chunk, head.remaining_prefill))
