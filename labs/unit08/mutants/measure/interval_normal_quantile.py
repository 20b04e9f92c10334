"""Mutant: interval uses the normal quantile (1.96 at 95 %) instead of Student's t with n - 1
degrees of freedom, so intervals over a few replications are far too narrow."""

from statistics import NormalDist


def interval(values, confidence):
    if len(values) < 2:
        raise ValueError("an interval needs at least 2 replications")
    n, mean, sd = len(values), statistics.fmean(values), statistics.stdev(values)  # noqa: F821
    half = NormalDist().inv_cdf((1 + confidence) / 2) * sd / math.sqrt(n)  # noqa: F821
    return Interval(n, mean, sd, mean - half, mean + half, confidence)  # noqa: F821
