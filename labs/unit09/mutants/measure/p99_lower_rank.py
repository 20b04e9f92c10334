"""Mutant: p99 takes index floor(0.99 (n - 1)) of the sorted values (a spreadsheet's or numpy's
"lower" percentile) instead of the nearest rank ceil(0.99 n)."""


def p99(values):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[math.floor(0.99 * (len(ordered) - 1))]  # noqa: F821
