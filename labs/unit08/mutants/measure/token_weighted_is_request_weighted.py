"""Mutant: tpot_means returns the request-weighted mean for both weightings."""

_tpot_means = tpot_means  # noqa: F821


def tpot_means(requests):
    per_request, _ = _tpot_means(requests)
    return per_request, per_request
