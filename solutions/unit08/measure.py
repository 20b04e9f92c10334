"""Unit 08 measurements: the second file you implement and submit.

Every function here reads the request records of a run entry (``run["requests"]`` of a run file,
see ``schemas/run.schema.json``). A record has ``id``, ``arrivalMs``, ``status``
(``"completed"``, ``"rejected"`` or ``"cancelled"``), ``tokenTimesMs`` (empty for a rejected
request), ``ttftMs`` and ``tpotMs`` (``None`` when undefined) and ``statusMs``: when the request
left the system (its last token, its cancellation, or its arrival when it was rejected).

Conventions (write them next to every figure you report):

- TTFT = first token - arrival; TPOT = (last token - first token) / (O - 1), undefined for O = 1.
- A request *qualifies* when it completed, passed the quality gate and met every SLO target.
- Rejected and cancelled requests stay in every denominator: they were submitted.
- Times are in milliseconds, rates in requests per second.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

COMPLETED, REJECTED, CANCELLED = "completed", "rejected", "cancelled"


@dataclass(frozen=True)
class Slo:
    """Latency targets; ``None`` means no target on that metric."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None


@dataclass(frozen=True)
class Goodput:
    """What a window of a run achieved, with both denominators written out."""

    submitted: int  # arrived in the window, whatever happened to them
    succeeded: int  # completed and passed the quality gate
    qualifying: int  # succeeded and met every SLO target
    window_s: float
    submitted_per_s: float
    succeeded_per_s: float
    goodput_per_s: float  # qualifying / window
    attainment_over_submitted: float  # qualifying / submitted
    attainment_over_succeeded: float | None  # qualifying / succeeded (None if none succeeded)


@dataclass(frozen=True)
class Little:
    """Both sides of Little's law over one observation window."""

    area_ms: float  # integral of N(t) over the window, in request-milliseconds
    clipped_residence_ms: float  # sum of each request's residence clipped to the window
    mean_in_system: float  # area / window length
    completion_rate_per_s: float  # departures inside the window per second
    mean_residence_ms: float | None  # mean (statusMs - arrivalMs) of those departures


def quality_passes(request_id: str, tier: str, pass_rate: float) -> bool:
    """The quality gate, given (not a stub): a deterministic coin for (request id, tier name).

    SHA-256 of ``"<tier>/<request id>"``; its first 8 bytes as an integer, divided by 2**64,
    give a number u in [0, 1); the request passes when u < ``pass_rate``. Runs are reproducible
    and a tier with rate 1.0 passes everything.
    """
    digest = hashlib.sha256(f"{tier}/{request_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < pass_rate


def meets_slo(request: dict, slo: Slo) -> bool:
    """Whether a request completed within every target of ``slo``.

    Only a completed request can meet an SLO. TTFT must be at most ``slo.ttft_ms``; TPOT at
    most ``slo.tpot_ms`` (a request with one output token has no TPOT and meets that target).
    """
    ### BEGIN SOLUTION
    if request["status"] != COMPLETED:
        return False
    if slo.ttft_ms is not None and request["ttftMs"] > slo.ttft_ms:
        return False
    tpot = request["tpotMs"]
    return slo.tpot_ms is None or tpot is None or tpot <= slo.tpot_ms
    ### END SOLUTION


def goodput(requests: list[dict], slo: Slo, start_ms: float, end_ms: float, passes=None) -> Goodput:
    """Goodput of the requests that arrived in ``[start_ms, end_ms)``, with both denominators.

    ``passes(request) -> bool`` is the quality gate (default: every request passes). Submitted
    counts every request that arrived in the window, rejected and cancelled ones included;
    succeeded counts the completed ones that pass the gate; qualifying those of them that meet
    the SLO. Rates divide by the window length in seconds. Chapter check: 1,000 submitted,
    100 rejected, 50 failed, 850 succeeded, 700 within every target over 100 s give 10, 8.5 and
    7 req/s, attainment 70 % over submitted and 700/850 over succeeded.
    """
    ### BEGIN SOLUTION
    passes = passes or (lambda request: True)
    window = [r for r in requests if start_ms <= r["arrivalMs"] < end_ms]
    succeeded = [r for r in window if r["status"] == COMPLETED and passes(r)]
    qualifying = sum(1 for r in succeeded if meets_slo(r, slo))
    window_s = (end_ms - start_ms) / 1000
    return Goodput(
        submitted=len(window),
        succeeded=len(succeeded),
        qualifying=qualifying,
        window_s=window_s,
        submitted_per_s=len(window) / window_s,
        succeeded_per_s=len(succeeded) / window_s,
        goodput_per_s=qualifying / window_s,
        attainment_over_submitted=qualifying / len(window) if window else 0.0,
        attainment_over_succeeded=qualifying / len(succeeded) if succeeded else None,
    )
    ### END SOLUTION


def area_under_n(requests: list[dict], start_ms: float, end_ms: float) -> float:
    """The integral of N(t) over ``[start_ms, end_ms]``, computed from N(t) itself.

    N(t) counts the requests in the system at time t: those with ``arrivalMs <= t < statusMs``.
    Build the step function from the arrival (+1) and departure (-1) instants in time order and
    add up N times the length of each piece that lies inside the window. Do not add residences
    here: that is the other side of the identity (``clipped_residence``).
    """
    ### BEGIN SOLUTION
    changes = sorted(
        [(r["arrivalMs"], 1) for r in requests] + [(r["statusMs"], -1) for r in requests]
    )
    area, in_system, last = 0.0, 0, start_ms
    for when, delta in changes:
        clipped = min(max(when, start_ms), end_ms)
        area += in_system * (clipped - last)
        last = clipped
        in_system += delta
    return area + in_system * (end_ms - last)
    ### END SOLUTION


def clipped_residence(requests: list[dict], start_ms: float, end_ms: float) -> float:
    """The sum over requests of ``|[arrivalMs, statusMs) ∩ [start_ms, end_ms]|``."""
    ### BEGIN SOLUTION
    return sum(
        max(0.0, min(r["statusMs"], end_ms) - max(r["arrivalMs"], start_ms)) for r in requests
    )
    ### END SOLUTION


def little(requests: list[dict], start_ms: float, end_ms: float) -> Little:
    """Little's law over a window, both sides (given: it uses the two functions above).

    The completion rate counts departures with ``start_ms < statusMs <= end_ms``; the mean
    residence is theirs. Exercise 31.6: residences [0, 2) and [1, 3) s in [0, 3] give area 4,
    mean 4/3 in the system, 2/3 completions per second and a mean residence of 2 s.
    """
    length = end_ms - start_ms
    done = [r["statusMs"] - r["arrivalMs"] for r in requests if start_ms < r["statusMs"] <= end_ms]
    area = area_under_n(requests, start_ms, end_ms)
    return Little(
        area_ms=area,
        clipped_residence_ms=clipped_residence(requests, start_ms, end_ms),
        mean_in_system=area / length,
        completion_rate_per_s=len(done) / (length / 1000),
        mean_residence_ms=sum(done) / len(done) if done else None,
    )


def tpot_means(requests: list[dict]) -> tuple[float | None, float | None]:
    """Request-weighted and token-weighted mean TPOT of the completed requests, in ms.

    Request-weighted: the mean over requests of each one's TPOT (requests with one output token
    have none and are left out). Token-weighted: every inter-token gap counts once, so it is
    the sum of (last - first) over those requests divided by the sum of their (O - 1); long
    outputs weigh more. ``None`` when no request has two tokens.
    """
    ### BEGIN SOLUTION
    spans = [
        (r["tokenTimesMs"][-1] - r["tokenTimesMs"][0], len(r["tokenTimesMs"]) - 1)
        for r in requests
        if r["status"] == COMPLETED and len(r["tokenTimesMs"]) > 1
    ]
    if not spans:
        return None, None
    per_request = sum(span / gaps for span, gaps in spans) / len(spans)
    per_token = sum(span for span, _ in spans) / sum(gaps for _, gaps in spans)
    return per_request, per_token
    ### END SOLUTION
