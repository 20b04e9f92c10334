"""Mutant: goodput's attainment "over submitted" divides by the succeeded requests instead."""

_goodput = goodput  # noqa: F821


def goodput(requests, slo, start_ms, end_ms, passes=None):
    result = _goodput(requests, slo, start_ms, end_ms, passes)
    over = result.qualifying / result.succeeded if result.succeeded else 0.0
    return Goodput(**{**result.__dict__, "attainment_over_submitted": over})  # noqa: F821
