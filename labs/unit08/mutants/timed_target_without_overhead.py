"""Mutant: timed holds the device work to the target and forgets the submission overhead."""

from servesim import Batch, SchedulerView

_timed = timed  # noqa: F821 (the solution's, which this file is appended to)


def timed(view: SchedulerView, target: int, share: int) -> Batch:
    return _timed(view, target + view.device.overhead_ms, share)
