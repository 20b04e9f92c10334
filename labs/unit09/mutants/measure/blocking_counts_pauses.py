"""Mutant: the prefill-blocking rule reads the p99 of every gap, those across a stream's pause
included, so slow clients look like prefill blocking."""

_evidence = evidence  # noqa: F821


def evidence(run):
    got = _evidence(run)
    return Evidence(**{**got.__dict__, "p99_schedule_itl_ms": got.p99_itl_ms})  # noqa: F821
