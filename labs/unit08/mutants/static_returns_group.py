"""Mutant: static returns its batch together with the ids of the group it chose (a tuple, not a
Batch).
"""

_static = static  # noqa: F821


def static(view):
    step = _static(view)
    return step, [c.id for c in step.prefill]
