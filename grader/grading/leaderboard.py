"""Gradescope's leaderboard for a unit's goodput cases: which figures, bounded and rounded.

    entries(metrics) -> list[dict] | None   # one ``metrics`` dict per goodput case

Only figures the parent computed from replayed runs reach it (``verdict`` puts them in a case's
``metrics``, with the bounds the case's trace allows).
"""

from __future__ import annotations

import math

LEADERBOARD_GOODPUT = "goodput (req/s)"
LEADERBOARD_RELATIVE = "goodput vs reference (%)"
LEADERBOARD_P99_TTFT = "p99 TTFT (ms)"
LEADERBOARD_DIGITS = 3  # significant figures a leaderboard value shows


def entries(metrics: list[dict]) -> list[dict] | None:
    """Gradescope's ``leaderboard`` entries from the goodput cases' ``metrics`` (None without
    any).

    Each figure is checked to be a finite number within what the case's trace allows and
    rounded to ``LEADERBOARD_DIGITS`` significant figures. goodput: the mean over the goodput
    cases of each run's goodput in req/s (a run that is not valid counts 0), higher ranks
    higher. goodput vs reference: the mean over the goodput cases of 100 x the run's goodput /
    the reference's on the same trace (a run that is not valid counts 0; a case on which the
    reference has no goodput is left out), higher ranks higher: with per-student variants each
    student is measured against the reference on their own traces, so this is the figure that
    compares students fairly. p99 TTFT: the worst p99 TTFT in ms over the valid runs, lower
    ranks higher; left out when no run was valid.
    """
    if not metrics:
        return None
    goodputs = [_bounded(m, "goodput", "goodputMax") or 0.0 for m in metrics]
    board = [
        {
            "name": LEADERBOARD_GOODPUT,
            "value": _rounded(sum(goodputs) / len(goodputs)),
            "order": "desc",
        }
    ]
    shares = [share for m in metrics if (share := _relative(m)) is not None]
    if shares:
        value = _rounded(100 * sum(shares) / len(shares))
        board.append({"name": LEADERBOARD_RELATIVE, "value": value, "order": "desc"})
    p99s = [_bounded(m, "p99TtftMs", "ttftMaxMs") for m in metrics]
    p99s = [value for value in p99s if value is not None]
    if p99s:
        worst = _rounded(max(p99s))
        board.append({"name": LEADERBOARD_P99_TTFT, "value": worst, "order": "asc"})
    return board


def _relative(metrics: dict) -> float | None:
    """goodput / reference goodput of one case: 0 for a run that is not valid (no reference
    figure recorded), None when the reference's goodput is 0 or not a bounded number."""
    if "referenceGoodput" not in metrics:
        return 0.0
    reference = _bounded(metrics, "referenceGoodput", "goodputMax")
    if not reference:
        return None
    return (_bounded(metrics, "goodput", "goodputMax") or 0.0) / reference


def _bounded(metrics: dict, name: str, bound: str) -> float | None:
    """``metrics[name]`` when it is a finite number in [0, ``metrics[bound]``], else None."""
    value, most = metrics.get(name), metrics.get(bound, math.inf)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(most, bool) or not isinstance(most, (int, float)):
        return None
    return float(value) if math.isfinite(value) and 0 <= value <= most else None


def _rounded(value: float) -> float:
    return float(f"{value:.{LEADERBOARD_DIGITS}g}")
