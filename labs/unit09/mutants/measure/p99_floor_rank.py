"""Mutant: p99 rounds the rank down, floor(0.99 n), instead of up (ceil)."""


def p99(values):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.floor(0.99 * len(ordered))) - 1]  # noqa: F821
