"""Mutant: timed never goes past the target for prefill (no minimum prefill share)."""

from servesim import Batch, SchedulerView

_timed = timed  # noqa: F821 (the solution's, which this file is appended to)


def timed(view: SchedulerView, target: int, share: int) -> Batch:
    return _timed(view, target, 0)
