"""Mutant: interval divides the spread by n (population standard deviation) instead of n - 1."""


def interval(values, confidence):
    if len(values) < 2:
        raise ValueError("an interval needs at least 2 replications")
    n, mean, sd = len(values), statistics.fmean(values), statistics.pstdev(values)  # noqa: F821
    half = t_quantile((1 + confidence) / 2, n - 1) * sd / math.sqrt(n)  # noqa: F821
    return Interval(n, mean, sd, mean - half, mean + half, confidence)  # noqa: F821
