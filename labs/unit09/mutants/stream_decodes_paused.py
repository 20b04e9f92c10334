"""Mutant: backpressure walks every holder, paused streams included, so it decodes a stream
whose output buffer is full."""

_cancel_aware = cancel_aware  # noqa: F821 (the reference's, above this file)


def backpressure(view, budget):
    return _cancel_aware(view, budget)
