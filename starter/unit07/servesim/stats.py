"""Student's t distribution, for confidence intervals over a few replications.

``t_quantile(p, df)`` is the inverse of the t distribution's CDF with ``df`` degrees of freedom:
for a 95 % two-sided interval over n replications use ``t_quantile(0.975, n - 1)`` (12.706 for
n = 2, 2.776 for n = 5, 1.96 as n grows). The CDF comes from the regularized incomplete beta
function (a continued fraction), the inverse from bisection to full double precision, so the
standard library suffices and every machine gets the same numbers.
"""

from __future__ import annotations

import math


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz's method)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 1000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < 1e-16:
            break
    return result


def _regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) for 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def t_cdf(x: float, df: int) -> float:
    """P(T <= x) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * _regularized_beta(df / 2, 0.5, df / (df + x * x))
    return 1.0 - tail if x >= 0 else tail


def t_quantile(p: float, df: int) -> float:
    """The x with P(T <= x) = p, for 0 < p < 1 and an integer ``df`` >= 1."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"t_quantile: p must be in (0, 1), got {p!r}")
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"t_quantile: df must be an integer >= 1, got {df!r}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, high * 2
    for _ in range(200):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        if t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
    return high
