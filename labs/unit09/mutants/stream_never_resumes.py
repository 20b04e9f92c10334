"""Mutant: backpressure remembers every stream it saw paused (view.memo) and leaves it out for
good, so a stream that drained to the low mark is never decoded again."""

from servesim import Batch, Wait

_backpressure = backpressure  # noqa: F821 (the reference's, above this file)


def backpressure(view, budget):
    seen = view.memo.setdefault("paused", set())
    seen.update(s.id for s in view.paused)
    step = _backpressure(view, budget)
    if not isinstance(step, Batch):
        return step
    decode = [rid for rid in step.decode if rid not in seen]
    chunks = [c for c in step.prefill if c.id not in seen]
    if decode or chunks or step.preempt or not view.paused:
        return Batch(decode=decode, prefill=chunks, preempt=step.preempt)
    return Wait(first_resume(view))  # noqa: F821
