"""Monkeypatches the device clock: every batch costs nothing, so the run looks instant.
The schedule itself is the correct one.

EARNS: none
"""

from servesim import Batch, DeviceProfile, SchedulerView

DeviceProfile.work_ms = lambda self, batch, context: 0.0
DeviceProfile.duration_ms = lambda self, batch, context: 0.0


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        first = view.waiting[0]
        return Batch.prefill_of(first, first.remaining_prefill)
    return Batch.decode_of(view.running)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    last_was_decode = view.previous is not None and bool(view.previous.decode)
    if view.running and not (last_was_decode and view.waiting):
        return Batch.decode_of(view.running)
    first = view.waiting[0]
    return Batch.prefill_of(first, min(chunk, first.remaining_prefill))
