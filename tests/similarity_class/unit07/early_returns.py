"""Unit 07, written from the handout: early returns and a helper for the next chunk."""

from servesim import Batch


def fcfs(view):
    if not view.waiting:
        return Batch.decode_of(view.running)
    first = view.waiting[0]
    return Batch.prefill_of(first, first.remaining_prefill)


def chunked(view, chunk):
    if not view.waiting:
        return Batch.decode_of(view.running)
    if not view.running:
        return _next_chunk(view.waiting[0], chunk)
    prev = view.previous
    if prev is None or not prev.decode:
        return Batch.decode_of(view.running)
    return _next_chunk(view.waiting[0], chunk)


def _next_chunk(seq, chunk):
    return Batch.prefill_of(seq, min(chunk, seq.remaining_prefill))
