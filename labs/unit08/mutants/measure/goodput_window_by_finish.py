"""Mutant: goodput picks the window's requests by when they left (statusMs), not when they
arrived.
"""

_goodput = goodput  # noqa: F821


def goodput(requests, slo, start_ms, end_ms, passes=None):
    moved = [{**r, "arrivalMs": r["statusMs"]} for r in requests]
    return _goodput(moved, slo, start_ms, end_ms, passes)
