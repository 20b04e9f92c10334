"""Returns batches the device cannot run: fcfs prefills more tokens than the prompt has, and
chunked returns None once anything runs (so it survives only traces where nothing
runs while a prompt waits: an honest reading earns those cases).

EARNS: replay
"""

from servesim import Batch, SchedulerView


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        first = view.waiting[0]
        return Batch.prefill_of(first, first.remaining_prefill + 5)
    return Batch.decode_of(view.running)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    if view.running:
        return None
    first = view.waiting[0]
    return Batch.prefill_of(first, min(chunk, first.remaining_prefill))
