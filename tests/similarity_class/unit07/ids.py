"""Unit 07, written from the handout: batches built from ids, the turn decided by a helper."""

from servesim import Batch


def fcfs(view):
    for seq in view.waiting:
        return Batch.prefill_of(seq, seq.remaining_prefill)
    return Batch(decode=[seq.id for seq in view.running])


def chunked(view, chunk):
    if _decode_turn(view):
        return Batch(decode=[seq.id for seq in view.running])
    head = next(iter(view.waiting))
    return Batch.prefill_of(head, max(1, min(head.remaining_prefill, chunk)))


def _decode_turn(view):
    """Decode when something runs, unless a decode just ran and a prompt waits."""
    if not view.running:
        return False
    if not view.waiting:
        return True
    last = view.previous
    return last is None or len(last.decode) == 0
