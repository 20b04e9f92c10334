"""Mutant: fair names each prefill chunk by its request's tenant instead of the request's id."""

_fair = fair  # noqa: F821


def fair(view, budget, quantum, weights=None):
    step = _fair(view, budget, quantum, weights)
    tenant = {s.id: s.tenant or s.id for s in view.waiting}
    chunks = [PrefillChunk(tenant[c.id], c.tokens) for c in step.prefill]  # noqa: F821
    return Batch(decode=step.decode, prefill=chunks, preempt=step.preempt)  # noqa: F821
