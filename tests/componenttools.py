"""Shared by the tests that register a rule no unit has (tests/test_next_*.py): registration
for one test, and the policy that schedules everything at once."""

from __future__ import annotations

from contextlib import contextmanager

from servesim import Batch, PrefillChunk, components


@contextmanager
def registered(component):
    """``component`` registered for the ``with`` block, and unregistered whatever happens."""
    components.register(component)
    try:
        yield component
    finally:
        components.unregister(component.name)


def greedy(view):
    """Every running request decodes and every waiting one prefills the rest of its prompt."""
    chunks = [PrefillChunk(s.id, s.remaining_prefill) for s in view.waiting]
    return Batch(decode=[s.id for s in view.running], prefill=chunks)
