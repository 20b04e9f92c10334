"""Mutant: budgeted gives at most one waiting request a prefill chunk per step, so budget stays
unused while a second prefill waits.
"""

_budgeted = budgeted  # noqa: F821


def budgeted(view, budget):
    step = _budgeted(view, budget)
    return Batch(decode=step.decode, prefill=step.prefill[:1])  # noqa: F821
