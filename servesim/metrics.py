"""Latency metrics from a token timeline (chapter 31, formulas 31.1 and 31.2).

TTFT = u1 - arrival (queueing included); ITL_j = u_j - u_{j-1} for j >= 2;
TPOT = (u_last - u1) / (O - 1), undefined (None) when O = 1; E2E = u_last - arrival.
Aggregates say how they weight: TTFT, TPOT and E2E per request, ITL per token gap.
Percentiles use the nearest-rank method.
"""

from __future__ import annotations

import math
from itertools import islice
from operator import sub

PERCENTILES = (50, 90, 99)


def itls(token_times_ms: list[float]):
    """ITL_j = u_j - u_{j-1} for j >= 2, one at a time (an iterator)."""
    return map(sub, islice(token_times_ms, 1, None), token_times_ms)


def ttft_and_max_itl(arrival_ms: float, token_times_ms: list[float]) -> tuple:
    """``request_metrics``' ``ttftMs`` and ``maxItlMs``, without listing the ITLs."""
    return token_times_ms[0] - arrival_ms, max(itls(token_times_ms), default=None)


def request_metrics(arrival_ms: float, token_times_ms: list[float]) -> dict:
    """The per-request fields of the run file, computed from its token times."""
    first, last = token_times_ms[0], token_times_ms[-1]
    itl = list(itls(token_times_ms))
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


NO_METRICS = {  # a request that was rejected or cancelled has no latency figures
    "firstTokenMs": None,
    "finishMs": None,
    "ttftMs": None,
    "itlMs": [],
    "maxItlMs": None,
    "tpotMs": None,
    "e2eMs": None,
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
    ordered = sorted(values)  # once for every percentile (``percentile`` sorts on each call)
    stats |= {f"p{p}": ordered[max(1, math.ceil(p / 100 * len(ordered))) - 1] for p in PERCENTILES}
    stats["max"] = max(values)
    return stats


def step_figures(events: list[dict]) -> dict:
    """The summary's figures of the event log: submissions, those with prefill or decode, and
    the time the device was busy."""
    return {
        "submissions": len(events),
        "prefillSubmissions": sum(1 for e in events if e["prefill"]),
        "decodeSubmissions": sum(1 for e in events if e["decode"]),
        "busyMs": sum(e["endMs"] - e["startMs"] for e in events),
    }


def summarize(
    requests: list[dict], events: list[dict] | None, *, extended: bool = False, steps=None
) -> dict:
    """Run-level figures from the per-request fields and the event log.

    Latency figures are over completed requests; ``extended`` adds the status counts
    and the recompute totals, and ``allDoneMs`` becomes the last status time. ``steps``: the
    event log's figures (``step_figures``) when the caller has them without ``events``.
    """
    done = [r for r in requests if r.get("status", "completed") == "completed"]
    defined = [r["tpotMs"] for r in done if r["tpotMs"] is not None]
    summary = {
        "requests": len(requests),
        "allDoneMs": max(r["finishMs"] for r in done) if not extended else _last_status(requests),
        **(step_figures(events) if steps is None else steps),
        "ttftMs": distribution([r["ttftMs"] for r in done]),
        "itlMs": distribution([gap for r in done for gap in r["itlMs"]]),
        "tpotMs": distribution(defined),
        "e2eMs": distribution([r["e2eMs"] for r in done]),
        "maxItlMs": max((r["maxItlMs"] for r in done if r["maxItlMs"] is not None), default=None),
        "weighting": {
            "ttftMs": "request",
            "itlMs": "token gap",
            "tpotMs": "request",
            "e2eMs": "request",
        },
        "percentile": "nearest-rank",
    }
    if extended:
        summary |= status_counts(requests)
    return summary


def _last_status(requests: list[dict]) -> float | None:
    return max((r["statusMs"] for r in requests), default=None)


def status_counts(requests: list[dict]) -> dict:
    """How many requests completed, were rejected or cancelled, and what recompute cost."""
    counts = {status: 0 for status in ("completed", "rejected", "cancelled")}
    for r in requests:
        counts[r["status"]] += 1
    admitted = sum(r["inputTokens"] for r in requests if r["status"] != "rejected")
    recomputed = sum(r["recomputedTokens"] for r in requests)
    return counts | {
        "recomputes": sum(r["recomputes"] for r in requests),
        "recomputedTokens": recomputed,
        "promptTokens": admitted,
        "recomputeRatio": recomputed / admitted if admitted else 0.0,
    }
