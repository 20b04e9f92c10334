"""Gradescope's leaderboard for a unit's goodput cases: which figures, bounded and rounded.

    entries(metrics) -> list[dict] | None   # one ``metrics`` dict per goodput case

Only figures the parent computed from replayed runs reach it (``verdict`` puts them in a case's
``metrics``, with the bounds the case's trace allows).
"""

from __future__ import annotations

import math

LEADERBOARD_GOODPUT = "goodput (req/s)"
LEADERBOARD_P99_TTFT = "p99 TTFT (ms)"
LEADERBOARD_DIGITS = 3  # significant figures a leaderboard value shows


def entries(metrics: list[dict]) -> list[dict] | None:
    """Gradescope's ``leaderboard`` entries from the goodput cases' ``metrics`` (None without
    any).

    Each figure is checked to be a finite number within what the case's trace allows and
    rounded to ``LEADERBOARD_DIGITS`` significant figures. goodput: the mean over the goodput
    cases of each run's goodput in req/s (a run that is not valid counts 0), higher ranks
    higher. p99 TTFT: the worst p99 TTFT in ms over the valid runs, lower ranks higher; left
    out when no run was valid.
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
    p99s = [_bounded(m, "p99TtftMs", "ttftMaxMs") for m in metrics]
    p99s = [value for value in p99s if value is not None]
    if p99s:
        worst = _rounded(max(p99s))
        board.append({"name": LEADERBOARD_P99_TTFT, "value": worst, "order": "asc"})
    return board


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
