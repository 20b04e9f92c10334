"""Mutant: diagnose answers NONE when no rule fires and there is no baseline, claiming the
tail did not grow with nothing to compare it with."""

_diagnose = diagnose  # noqa: F821


def diagnose(run, baseline=None):
    got = _diagnose(run, baseline)
    if baseline is None and got.cause is Cause.NOT_ENOUGH_EVIDENCE and got.evidence.served >= 20:  # noqa: F821
        return Diagnosis(Cause.NONE, got.evidence, ACTIONS[Cause.NONE])  # noqa: F821
    return got
