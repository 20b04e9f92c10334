"""Mutant: requests that arrive at the same time are served in id order instead of trace order."""

from servesim import Batch, PrefillChunk, SchedulerView  # noqa: F401


def _head(view: SchedulerView):
    return min(view.waiting, key=lambda s: (s.arrival_ms, s.id))


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        head = _head(view)
        return Batch.prefill_of(head, head.remaining_prefill)
    return Batch.decode_of(view.running)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    decoded_last = view.previous is not None and bool(view.previous.decode)
    if view.running and (not decoded_last or not view.waiting):
        return Batch.decode_of(view.running)
    head = _head(view)
    return Batch.prefill_of(head, min(chunk, head.remaining_prefill))
