"""Mutant: budgeted and paged fill the whole budget with prefill, not counting the decodes."""

from servesim import Batch, PrefillChunk, SchedulerView  # noqa: F401

_budgeted, _paged = budgeted, paged  # noqa: F821


def budgeted(view, budget):
    return _budgeted(view, budget + len(view.running))


def paged(view, budget):
    return _paged(view, budget + len(view.running))
