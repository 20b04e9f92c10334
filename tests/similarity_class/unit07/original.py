"""Unit 07, written from the handout: the submission that another student copies (the test
renames its variables and reorders its functions to make the copy)."""

from servesim import Batch


def fcfs(view):
    pending = view.waiting
    if pending:
        request = pending[0]
        remaining = request.remaining_prefill
        return Batch.prefill_of(request, remaining)
    active = view.running
    return Batch.decode_of(active)


def chunked(view, chunk):
    active = view.running
    pending = view.waiting
    last_batch = view.previous
    last_was_decode = last_batch is not None and len(last_batch.decode) > 0
    if active and not pending:
        return Batch.decode_of(active)
    if active and not last_was_decode:
        return Batch.decode_of(active)
    request = pending[0]
    amount = min(chunk, request.remaining_prefill)
    return Batch.prefill_of(request, amount)
