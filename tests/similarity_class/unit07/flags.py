"""Unit 07, written from the handout: named conditions first, one decision at the end."""

from servesim import Batch


def fcfs(view):
    waiting = list(view.waiting)
    if len(waiting) > 0:
        oldest = waiting[0]
        tokens_left = oldest.remaining_prefill
        return Batch.prefill_of(oldest, tokens_left)
    return Batch.decode_of(list(view.running))


def chunked(view, chunk):
    has_running = len(view.running) > 0
    has_waiting = len(view.waiting) > 0
    just_decoded = False
    if view.previous is not None:
        just_decoded = len(view.previous.decode) > 0
    should_decode = has_running and (not has_waiting or not just_decoded)
    if should_decode:
        return Batch.decode_of(view.running)
    target = view.waiting[0]
    size = chunk if chunk < target.remaining_prefill else target.remaining_prefill
    return Batch.prefill_of(target, size)
