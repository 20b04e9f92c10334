"""Mutant: static batching keeps length buckets but ignores the wait window: the bucket of the
first waiting request leaves at once, however few it holds."""

from servesim import Batch


def static(view, bucket=0, wait_ms=0):
    if view.running:
        return Batch.decode_of(view.running)
    cap = view.device.max_active

    def key(seq):
        return (seq.prefill_target - 1) // bucket if bucket else 0

    group = [s for s in view.waiting if key(s) == key(view.waiting[0])]
    return whole_prompts(group if cap is None else group[:cap])  # noqa: F821
