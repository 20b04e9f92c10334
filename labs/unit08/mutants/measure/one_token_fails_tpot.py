"""Mutant: meets_slo fails a one-token request on the TPOT target (it has no TPOT, so it meets
it).
"""

_meets_slo = meets_slo  # noqa: F821


def meets_slo(request, slo):
    if slo.tpot_ms is not None and request.get("tpotMs") is None:
        return False
    return _meets_slo(request, slo)
