"""What the non-exact case kinds decide (``kind`` in unit.yaml; ``grader.cases.Kind``).

``script``: the child ran a given script of the lab folder (``--input CHECK --output ANSWERS``)
on ``{"run": <the reference's run of the case>, "args": <the case's args>}``; its answers are
compared with the reference's (the same script run on the solution's editable files, stored in
the golden file) value by value, numbers within ``TOLERANCE``. Partial credit counts only
what an answer matches above the majority baseline (``credited_share``): a constant answer, or
the reference's most common answer everywhere, earns nothing on the case. Across the set of
cases of one kind (the function they grade), ``constant_answers`` decides the same for every
answer a constant can give: a set no better than the best of them earns nothing.

``goodput``: the child's run, once the replay found it valid, is scored by its goodput under the
case's SLO relative to the reference's run on the same case, over unit 08's one measurement
window (``servesim.protocol.measurement_window``: by arrival, ``[start, end)``; a graded trace
has no warm-up and a cool-down of one request, so the window runs from its first arrival to its
last and holds every request but the last to arrive):

    goodput = qualifying requests that arrived in the window / window length (s)
    qualifying = completed, TTFT <= slo.ttftMs and TPOT <= slo.tpotMs (a one-token request has
                 no TPOT and meets that target)
    points = case points x min(CAP, goodput / reference goodput)   (full points when the
             reference qualifies none)
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass

from servesim.protocol import Window, measurement_window

TOLERANCE = 1e-9  # relative (and absolute near 0) for numbers in script answers
CAP = 1.0  # most a goodput case pays, as a share of its points


def same_value(got, want) -> bool:
    """Whether an answer equals the reference's: same shape, numbers within ``TOLERANCE``."""
    if isinstance(want, bool) or want is None or isinstance(want, str):
        return got == want and type(got) is type(want)
    if isinstance(want, (int, float)):
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            return False
        if not math.isfinite(got):
            return False
        return abs(got - want) <= TOLERANCE * max(1.0, abs(want))
    if isinstance(want, list):
        return (
            isinstance(got, list)
            and len(got) == len(want)
            and all(same_value(g, w) for g, w in zip(got, want, strict=True))
        )
    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and set(got) == set(want)
            and all(same_value(got[k], w) for k, w in want.items())
        )
    return False


def answer_share(got, want) -> float:
    """Share of the reference's answers (list items, or the whole answer) that ``got`` matches."""
    if isinstance(want, list) and isinstance(got, list) and len(got) == len(want) and want:
        return sum(same_value(g, w) for g, w in zip(got, want, strict=True)) / len(want)
    return 1.0 if same_value(got, want) else 0.0


def constant_share(want) -> float:
    """The share of a list answer that the best constant answer matches (its most common
    item's share: the majority baseline); 0 for an answer that is not a list."""
    if not isinstance(want, list) or not want:
        return 0.0
    counts = Counter(json.dumps(item, sort_keys=True) for item in want)
    return max(counts.values()) / len(want)


def credited_share(got, want) -> float:
    """The share of a script answer that earns credit: only what it matches above the majority
    baseline, rescaled to [0, 1], so a constant answer (or the majority answer) earns nothing
    and every answer right earns 1."""
    share, base = answer_share(got, want), constant_share(want)
    if share >= 1.0:
        return 1.0
    if base >= 1.0:
        return 0.0
    return max(0.0, (share - base) / (1.0 - base))


@dataclass(frozen=True)
class GoodputScore:
    qualifying: int
    goodput_per_s: float
    p99_ttft_ms: float | None  # nearest rank, over completed requests


GRADED_WARMUP, GRADED_COOLDOWN = 0, 1  # a graded trace's measurement window


def graded_window(requests: list[dict]) -> Window:
    """The measurement window of a graded trace's run (by the requests' arrival times)."""
    arrivals = [r["arrivalMs"] for r in requests]
    return measurement_window(arrivals, GRADED_WARMUP, GRADED_COOLDOWN)


def qualifies(request: dict, slo: dict) -> bool:
    if request.get("status", "completed") != "completed" or request.get("ttftMs") is None:
        return False
    if "ttftMs" in slo and request["ttftMs"] > slo["ttftMs"]:
        return False
    tpot = request.get("tpotMs")
    return "tpotMs" not in slo or tpot is None or tpot <= slo["tpotMs"]


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in (0, 100]); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def goodput_score(requests: list[dict], slo: dict) -> GoodputScore:
    """Goodput of verified request entries (each with arrivalMs, status and the metrics the
    parent recomputed) under ``slo`` ({ttftMs, tpotMs}), over the graded window."""
    window = graded_window(requests)
    qualifying = sum(qualifies(r, slo) for r in window.select(requests))
    ttfts = [
        r["ttftMs"]
        for r in requests
        if r.get("status", "completed") == "completed" and r.get("ttftMs") is not None
    ]
    return GoodputScore(qualifying, qualifying / window.length_s, percentile(ttfts, 99))


def trace_bounds(trace_doc: dict, device: dict) -> dict:
    """What the trace and the device allow a valid run, for checking leaderboard figures:
    ``goodputMax`` (every request qualifies) and ``ttftMaxMs`` (the first arrival to the end of
    the longest run the replay accepts: steps, prefill and decode positions at their bounds,
    the device never idle while a request is live)."""
    from .verify.normalise import TraceBounds

    requests = trace_doc["requests"]
    bounds = TraceBounds.of(trace_doc)
    decode_ms = device.get("decodeBatchMs", 0) + device.get("decodeMsPerSeq", 0) * len(requests)
    busy = (
        bounds.steps * device.get("overheadMs", 0)
        + (bounds.prompts + bounds.recompute) * device.get("prefillMsPerToken", 0)
        + sum(bounds.outputs) * decode_ms
    )
    if device.get("prefillMsPerContextToken") or device.get("decodeMsPerContextToken"):
        busy = math.inf  # calibrated profiles: a step's cost grows with its context
    arrivals = [r["arrivalMs"] for r in requests]
    window = graded_window(requests)
    return {
        "goodputMax": len(window.select(requests)) / window.length_s,
        "ttftMaxMs": max(arrivals) - min(arrivals) + busy,
    }


def goodput_share(student: GoodputScore, reference: GoodputScore) -> float:
    """min(CAP, student / reference goodput); full marks when the reference qualifies none."""
    if reference.goodput_per_s <= 0:
        return CAP
    return min(CAP, student.goodput_per_s / reference.goodput_per_s)
