"""Mutant: budgeted marks each request it gives a chunk as started (``seq.started = True``),
changing the engine's sequences through its view.
"""

_budgeted = budgeted  # noqa: F821


def budgeted(view, budget):
    step = _budgeted(view, budget)
    chunked = {c.id for c in step.prefill}
    for seq in view.waiting:
        if seq.id in chunked:
            seq.started = True
    return step
