"""Mutant: a request with one output token is still sent to decode (the first token is taken to
come from the first decode step), which the engine rejects.
"""

from servesim import Batch, PrefillChunk, SchedulerView  # noqa: F401

_seen = {}


def _needs_decode(view: SchedulerView) -> list:
    for seq in (*view.waiting, *view.running):
        _seen[seq.id] = seq
    return [
        s.id
        for s in _seen.values()
        if s.remaining_prefill == 0 and s.generated < max(s.output_tokens, 2)
    ]


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        head = view.waiting[0]
        return Batch.prefill_of(head, head.remaining_prefill)
    return Batch(decode=_needs_decode(view))


def chunked(view: SchedulerView, chunk: int) -> Batch:
    decode = _needs_decode(view)
    decoded_last = view.previous is not None and bool(view.previous.decode)
    if decode and (not decoded_last or not view.waiting):
        return Batch(decode=decode)
    head = view.waiting[0]
    return Batch.prefill_of(head, min(chunk, head.remaining_prefill))
