"""Finding 9: a submission graded once, then replaced by a correct one under the same name.

As shipped it is wrong (fcfs serves the newest arrival first); test_batch_hardening swaps in
the reference solution and expects the rerun to regrade it (its hash changed), and adds a
case to the unit to expect every report to be regraded.

EARNS: replay
"""

from servesim import Batch, SchedulerView


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        first = view.waiting[-1]
        return Batch.prefill_of(first, first.remaining_prefill)
    return Batch.decode_of(view.running)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    last_was_decode = view.previous is not None and bool(view.previous.decode)
    if view.running and not (last_was_decode and view.waiting):
        return Batch.decode_of(view.running)
    first = view.waiting[0]
    return Batch.prefill_of(first, min(chunk, first.remaining_prefill))
