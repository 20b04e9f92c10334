"""Mutant: the p99 of replication() leaves out the requests that got no first token (rejected
or cancelled before it) instead of counting them as infinitely late."""

_percentile = percentile  # noqa: F821


def percentile(values, p):
    return _percentile([v for v in values if not math.isinf(v)], p)  # noqa: F821
