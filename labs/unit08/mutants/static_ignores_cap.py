"""Mutant: static batching admits every waiting request as one group, whatever K is."""

from servesim import Batch


def static(view, bucket=0, wait_ms=0):
    if view.running:
        return Batch.decode_of(view.running)
    return whole_prompts(view.waiting)  # noqa: F821
