"""Chapter 31.4-31.5 worked numbers: residence area, M/M/1, admission, backpressure, bursts.

Loaded by ``chapter31.py`` (the notes-page plug-in); every number the page shows for these
sections is computed here from the chapter's example parameters.
"""

from __future__ import annotations

import math
from fractions import Fraction


def step_function(stays: list[tuple[int, int]], window: tuple[int, int]) -> list[tuple]:
    """N(t) on ``window`` as ``(start, end, count)`` pieces, counted from half-open stays."""
    lo, hi = window
    cuts = sorted({lo, hi, *(t for stay in stays for t in stay if lo < t < hi)})
    return [
        (a, b, sum(1 for s, e in stays if s <= a < e)) for a, b in zip(cuts, cuts[1:], strict=False)
    ]


def area_example(stays=((0, 2), (1, 3)), window=(0, 3)) -> dict:
    """Formula 31.7 on exercise 31.6's two requests: area under N(t) = sum of clipped stays."""
    lo, hi = window
    pieces = step_function(list(stays), window)
    area = sum((b - a) * n for a, b, n in pieces)
    clipped = sum(max(0, min(e, hi) - max(s, lo)) for s, e in stays)
    length = hi - lo
    completed = sum(1 for _, e in stays if lo < e <= hi)
    mean_stay = Fraction(sum(e - s for s, e in stays), len(stays))
    return {
        "stays": list(stays),
        "window": window,
        "counts": [n for _, _, n in pieces],
        "area": area,
        "clipped": clipped,
        "mean_n": Fraction(area, length),
        "rate": Fraction(completed, length),
        "mean_stay": mean_stay,
    }


def mm1_transform(lam: float, mu: float, z: float, terms: int = 2000) -> tuple[float, float]:
    """(series 31.11 summed term by term, closed form 31.12) of E[exp(-zT)] for M/M/1."""
    rho = lam / mu
    series = sum((1 - rho) * rho**n * (mu / (mu + z)) ** (n + 1) for n in range(terms))
    return series, (mu - lam) / (mu - lam + z)


def mm1_row(lam: float, mu: float) -> dict:
    rho = lam / mu
    return {
        "lam": lam,
        "mu": mu,
        "rho": rho,
        "in_system": rho / (1 - rho),
        "in_queue": rho * rho / (1 - rho),
        "idle": 1 - rho,
        "mean_ms": 1000 / (mu - lam),
        "wait_ms": 1000 * rho / (mu - lam),
        "p99_ms": 1000 * math.log(100) / (mu - lam),
    }


def admission_example(deadline_s=2.0, margin_s=0.2, service_s=1.1, waits=(0.6, 0.9)) -> dict:
    """Formula 31.14 for two requests that differ only in their estimated wait."""
    rows = []
    for wait in waits:
        need = wait + service_s + margin_s
        rows.append({"wait_s": wait, "need_s": need, "admit": need <= deadline_s})
    return {"deadline_s": deadline_s, "margin_s": margin_s, "service_s": service_s, "rows": rows}


def union_bound(q1=0.99, q2=0.99, t1_ms=100, t2_ms=200) -> dict:
    """Exercise 31.8: P(X+Y > t1+t2) <= P(X > t1) + P(Y > t2), without independence."""
    tail = Fraction(round((1 - q1) * 1000), 1000) + Fraction(round((1 - q2) * 1000), 1000)
    each = 1 - Fraction(1, 100) / 2
    return {
        "t1_ms": t1_ms,
        "t2_ms": t2_ms,
        "sum_ms": t1_ms + t2_ms,
        "tail": tail,
        "coverage": 1 - tail,
        "each_for_99": each,
        "each_gives": 1 - 2 * (1 - each),
    }


def buffer_fill_s(capacity: float, produce: float, consume: float) -> float | None:
    """Seconds until an empty buffer fills; None when it never does (consume >= produce)."""
    return None if produce <= consume else capacity / (produce - consume)


def burst_example(lam_b=150, mu_b=100, tau_s=4, lam_after=80) -> dict:
    """Fluid estimate of a burst's backlog and the time to drain it afterwards."""
    backlog = (lam_b - mu_b) * tau_s
    return {
        "lam_b": lam_b,
        "mu_b": mu_b,
        "tau_s": tau_s,
        "lam_after": lam_after,
        "backlog": backlog,
        "drain_s": backlog / (mu_b - lam_after),
    }
