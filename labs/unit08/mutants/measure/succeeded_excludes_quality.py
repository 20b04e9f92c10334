"""Mutant: goodput counts a request as succeeded only when it also passed the quality check
(the textbook counts every completed request, and makes quality one of the targets)."""

_goodput = goodput  # noqa: F821


def goodput(requests, slo, start_ms, end_ms, passes=None):
    result = _goodput(requests, slo, start_ms, end_ms, passes)
    check = passes or (lambda request: True)
    inside = [r for r in requests if start_ms <= r["arrivalMs"] < end_ms]
    succeeded = sum(1 for r in inside if r["status"] == COMPLETED and check(r))  # noqa: F821
    over = result.qualifying / succeeded if succeeded else None
    return Goodput(  # noqa: F821
        **{
            **result.__dict__,
            "succeeded": succeeded,
            "succeeded_per_s": succeeded / result.window_s,
            "attainment_over_succeeded": over,
        }
    )
