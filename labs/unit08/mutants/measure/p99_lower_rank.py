"""Mutant: the p99 of replication() takes index floor(0.99 (n - 1)) of the sorted TTFTs (a
spreadsheet's or numpy's "lower" percentile) instead of the nearest rank ceil(0.99 n)."""


def percentile(values, p):
    ordered = sorted(values)
    return ordered[math.floor(p / 100 * (len(ordered) - 1))]  # noqa: F821
