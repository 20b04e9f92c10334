"""Mutant: correct only for requests whose ids appear in the public traces; anything else is served
newest first. An answer keyed to known traces, caught by relabelled copies.
"""

from servesim import Batch, PrefillChunk, SchedulerView  # noqa: F401

KNOWN = {"A", "L", "S", "P", "U1", "U2", "U3", "U4"}


def _head(view: SchedulerView):
    known = all(s.id in KNOWN for s in (*view.waiting, *view.running))
    return view.waiting[0] if known else view.waiting[-1]


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
