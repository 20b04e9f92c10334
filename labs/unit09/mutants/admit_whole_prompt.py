"""Mutant: prefix_admit keeps paged's rule (the pages of the whole prompt must be free), so the
shared pages it would only reference keep it waiting."""

from servesim import Batch, SchedulerView


def prefix_admit(view: SchedulerView, budget: int) -> Batch:
    return prefix_paged(view, budget)  # noqa: F821
