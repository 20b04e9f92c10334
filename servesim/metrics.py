"""Latency metrics from a token timeline (chapter 31, formulas 31.1 and 31.2).

TTFT = u1 - arrival (queueing included); ITL_j = u_j - u_{j-1} for j >= 2;
TPOT = (u_last - u1) / (O - 1), undefined (None) when O = 1; E2E = u_last - arrival.
Aggregates say how they weight: TTFT, TPOT and E2E per request, ITL per token gap.
Percentiles use the nearest-rank method.
"""

from __future__ import annotations

import math

PERCENTILES = (50, 90, 99)


def request_metrics(arrival_ms: float, token_times_ms: list[float]) -> dict:
    """The per-request fields of the run file, computed from its token times."""
    first, last = token_times_ms[0], token_times_ms[-1]
    itl = [b - a for a, b in zip(token_times_ms, token_times_ms[1:])]
    count = len(token_times_ms)
    return {
        "firstTokenMs": first,
        "finishMs": last,
        "ttftMs": first - arrival_ms,
        "itlMs": itl,
        "maxItlMs": max(itl) if itl else None,
        "tpotMs": (last - first) / (count - 1) if count > 1 else None,
        "e2eMs": last - arrival_ms,
    }


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile: the smallest value with at least p% of values at or below it."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def distribution(values: list[float]) -> dict | None:
    if not values:
        return None
    stats = {"count": len(values), "mean": sum(values) / len(values)}
    stats |= {f"p{p}": percentile(values, p) for p in PERCENTILES}
    stats["max"] = max(values)
    return stats


def summarize(requests: list[dict], events: list[dict]) -> dict:
    """Run-level figures from the per-request fields and the event log."""
    defined = [r["tpotMs"] for r in requests if r["tpotMs"] is not None]
    return {
        "requests": len(requests),
        "allDoneMs": max(r["finishMs"] for r in requests),
        "submissions": len(events),
        "prefillSubmissions": sum(1 for e in events if e["prefill"]),
        "decodeSubmissions": sum(1 for e in events if e["decode"]),
        "busyMs": sum(e["endMs"] - e["startMs"] for e in events),
        "ttftMs": distribution([r["ttftMs"] for r in requests]),
        "itlMs": distribution([gap for r in requests for gap in r["itlMs"]]),
        "tpotMs": distribution(defined),
        "e2eMs": distribution([r["e2eMs"] for r in requests]),
        "maxItlMs": max(
            (r["maxItlMs"] for r in requests if r["maxItlMs"] is not None), default=None
        ),
        "weighting": {
            "ttftMs": "request",
            "itlMs": "token gap",
            "tpotMs": "request",
            "e2eMs": "request",
        },
        "percentile": "nearest-rank",
    }
