"""Mutant: timed prices a step with the affine device only (no attention pairs, no cached
positions read), so long contexts overrun the target."""

from dataclasses import replace as _replace

from servesim import Batch, SchedulerView

_timed = timed  # noqa: F821 (the solution's, which this file is appended to)


def timed(view: SchedulerView, target: int, share: int) -> Batch:
    affine = _replace(
        view.device, prefill_ms_per_context_token=0.0, decode_ms_per_context_token=0.0
    )
    return _timed(_replace(view, device=affine), target, share)
