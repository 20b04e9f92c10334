"""Mutant: budgeted sizes its prefill chunks with float arithmetic, so a chunk's token count is a
float (the engine takes only int token counts).
"""

_budgeted = budgeted  # noqa: F821


def budgeted(view, budget):
    step = _budgeted(view, budget)
    chunks = [PrefillChunk(c.id, c.tokens * 1.0) for c in step.prefill]  # noqa: F821
    return Batch(decode=step.decode, prefill=chunks)  # noqa: F821
