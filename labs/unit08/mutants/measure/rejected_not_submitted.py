"""Mutant: goodput leaves rejected requests out of the submitted count (they never ran)."""

_goodput = goodput  # noqa: F821


def goodput(requests, slo, start_ms, end_ms, passes=None):
    kept = [r for r in requests if r["status"] != REJECTED]  # noqa: F821
    return _goodput(kept, slo, start_ms, end_ms, passes)
