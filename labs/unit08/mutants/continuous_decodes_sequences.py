"""Mutant: continuous puts the running sequences themselves in its decode list, not their ids."""

_continuous = continuous  # noqa: F821


def continuous(view):
    step = _continuous(view)
    decode = [s for s in view.running if s.id in step.decode]
    return Batch(decode=decode, prefill=step.prefill)  # noqa: F821
