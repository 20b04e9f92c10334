"""Mutant: budgeted fills B + 1 positions per step (an off-by-one on the budget), which the
engine refuses.
"""

_budgeted = budgeted  # noqa: F821


def budgeted(view, budget):
    return _budgeted(view, budget + 1)
