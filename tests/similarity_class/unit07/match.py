"""Unit 07, written from the handout: a match on the queue, prefill as the guarded case."""

from servesim import Batch


def fcfs(view):
    queue = view.waiting
    match len(queue):
        case 0:
            return Batch.decode_of(view.running)
        case _:
            return Batch.prefill_of(queue[0], queue[0].remaining_prefill)


def chunked(view, chunk):
    decoded = bool(view.previous and view.previous.decode)
    running, waiting = view.running, view.waiting
    if waiting and (decoded or not running):
        nxt = waiting[0]
        return Batch.prefill_of(nxt, min(nxt.remaining_prefill, chunk))
    return Batch.decode_of(running)
