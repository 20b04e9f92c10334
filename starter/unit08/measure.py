"""Unit 08 measurements: the second file you implement and submit.

Every function here reads the request records of a run entry (``run["requests"]`` of a run file,
see ``schemas/run.schema.json``). A record has ``id``, ``arrivalMs``, ``status``
(``"completed"``, ``"rejected"`` or ``"cancelled"``), ``tokenTimesMs`` (empty for a rejected
request), ``ttftMs`` and ``tpotMs`` (``None`` when undefined) and ``statusMs``: when the request
left the system (its last token, its cancellation, or its arrival when it was rejected).

Conventions (textbook section 31.7; write them next to every figure you report):

- TTFT = first token - arrival; TPOT = (last token - first token) / (O - 1), undefined for O = 1.
- A request *succeeded* when it completed, whatever its quality (rejected and cancelled ones
  did not). It *qualifies* when it succeeded and met every target: the quality check and each
  SLO target. Goodput = qualifying requests / window length.
- Attainment is reported over both denominators: qualifying / submitted (rejected and cancelled
  requests stay in it: they were submitted) and qualifying / succeeded.
- The measurement window is ``servesim.protocol.measurement_window``: requests belong to it by
  arrival, ``[start, end)``, after the protocol's warm-up and before its cool-down.
- A figure from several replications is reported with its confidence interval; a verdict is
  feasible, infeasible or not yet known, never a bare pass from one run.
- Times are in milliseconds, rates in requests per second.
"""

from __future__ import annotations

import hashlib
import math
import statistics  # noqa: F401, RUF100 (for interval())
from dataclasses import dataclass

from servesim.metrics import percentile  # noqa: F401, RUF100 (for replication())
from servesim.protocol import measurement_window  # noqa: F401, RUF100 (for replication())
from servesim.stats import t_quantile

COMPLETED, REJECTED, CANCELLED = "completed", "rejected", "cancelled"
FEASIBLE, INFEASIBLE, NOT_YET_KNOWN = "feasible", "infeasible", "not yet known"
MAX_REPLICATIONS = 1000  # replications_to_decide looks no further


@dataclass(frozen=True)
class Slo:
    """Latency targets; ``None`` means no target on that metric."""

    ttft_ms: float | None = None
    tpot_ms: float | None = None


@dataclass(frozen=True)
class Goodput:
    """What a window of a run achieved, with both denominators written out."""

    submitted: int  # arrived in the window, whatever happened to them
    succeeded: int  # completed, whatever their quality
    qualifying: int  # succeeded and met every target: quality and each SLO target
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


@dataclass(frozen=True)
class Interval:
    """A confidence interval for the mean of one figure across replications."""

    n: int  # replications
    mean: float
    sd: float  # sample standard deviation (divides by n - 1)
    low: float
    high: float
    confidence: float


@dataclass(frozen=True)
class Target:
    """A target a figure must reach: at least ``value`` (``at_least``), or at most it."""

    name: str
    value: float
    at_least: bool = True


@dataclass(frozen=True)
class Verdict:
    """Whether a configuration meets its targets at one load, as far as the runs can tell."""

    outcome: str  # FEASIBLE, INFEASIBLE or NOT_YET_KNOWN
    undecided: tuple[str, ...]  # names of the targets whose interval holds their value
    replications_needed: int | None  # replications that would decide (see verdict())
    longer_runs: bool  # not yet known because the runs were not steady: run longer


@dataclass(frozen=True)
class Steady:
    """The steady-state check of one run: the backlog in each half of the window."""

    first_half_in_system: float  # mean number in the system over the first half
    second_half_in_system: float  # ... over the second half
    steady: bool


@dataclass(frozen=True)
class Replication:
    """One replication's figures over the protocol's measurement window."""

    window_start_ms: float
    window_end_ms: float
    goodput: Goodput
    p99_ttft_ms: float | None  # None: infinite (more than 1 % got no first token)
    quality_pass_rate: float | None  # share of the succeeded that passed (None: none succeeded)
    steady: Steady


def quality_passes(request_id: str, tier: str, pass_rate: float, seed: int) -> bool:
    """The quality check, given (not a stub): a deterministic coin for (seed, tier, request id).

    SHA-256 of ``"<seed>/<tier>/<request id>"``; its first 8 bytes as an integer, divided by
    2**64, give a number u in [0, 1); the request passes when u < ``pass_rate``. The seed is the
    replication's: each replication draws its own outcomes (a coin of tier and id alone would
    repeat the same outcomes in every replication), and a rerun draws the same ones again.
    """
    digest = hashlib.sha256(f"{seed}/{tier}/{request_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < pass_rate


def meets_slo(request: dict, slo: Slo) -> bool:
    """Whether a request completed within every target of ``slo``.

    Only a completed request can meet an SLO. TTFT must be at most ``slo.ttft_ms``; TPOT at
    most ``slo.tpot_ms`` (a request with one output token has no TPOT and meets that target).
    """
    # YOUR CODE HERE
    raise NotImplementedError("meets_slo() is not implemented yet")


def goodput(requests: list[dict], slo: Slo, start_ms: float, end_ms: float, passes=None) -> Goodput:
    """Goodput of the requests that arrived in ``[start_ms, end_ms)``, with both denominators.

    ``passes(request) -> bool`` is the quality check (default: every request passes). Submitted
    counts every request that arrived in the window, rejected and cancelled ones included;
    succeeded counts the completed ones, whatever their quality; qualifying those of them that
    pass the quality check and meet the SLO. Rates divide by the window length in seconds.
    Chapter check: 1,000 submitted, 100 rejected, 50 failed, 850 succeeded, 700 of them within
    every target (quality included) over 100 s give 10, 8.5 and 7 req/s, attainment 70 % over
    submitted and 700/850 over succeeded.
    """
    # YOUR CODE HERE
    raise NotImplementedError("goodput() is not implemented yet")


def area_under_n(requests: list[dict], start_ms: float, end_ms: float) -> float:
    """The integral of N(t) over ``[start_ms, end_ms]``, computed from N(t) itself.

    N(t) counts the requests in the system at time t: those with ``arrivalMs <= t < statusMs``.
    Build the step function from the arrival (+1) and departure (-1) instants in time order and
    add up N times the length of each piece that lies inside the window. Do not add residences
    here: that is the other side of the identity (``clipped_residence``).
    """
    # YOUR CODE HERE
    raise NotImplementedError("area_under_n() is not implemented yet")


def clipped_residence(requests: list[dict], start_ms: float, end_ms: float) -> float:
    """The sum over requests of ``|[arrivalMs, statusMs) ∩ [start_ms, end_ms]|``."""
    # YOUR CODE HERE
    raise NotImplementedError("clipped_residence() is not implemented yet")


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
    # YOUR CODE HERE
    raise NotImplementedError("tpot_means() is not implemented yet")


def interval(values: list[float], confidence: float) -> Interval:
    """The Student-t confidence interval for the mean of ``values``, one value per replication.

    Replications are independent runs, so their values are independent draws: with n values,
    mean m (``statistics.fmean``) and sample standard deviation s (``statistics.stdev``,
    dividing by n - 1), the interval is m +- t * s / sqrt(n), where
    t = ``t_quantile((1 + confidence) / 2, n - 1)`` (given, from ``servesim.stats``). Needs
    n >= 2: raise ``ValueError`` otherwise (one run says nothing about its own spread).
    """
    # YOUR CODE HERE
    raise NotImplementedError("interval() is not implemented yet")


def replications_to_decide(figure: Interval, value: float) -> int | None:
    """How many replications would decide whether the mean is above or below ``value``
    (given): the smallest n > ``figure.n`` at which an interval with the same mean and
    standard deviation would leave ``value`` out, that is
    t_quantile((1 + c) / 2, n - 1) * sd / sqrt(n) < |mean - value|. ``None`` when the mean
    equals ``value`` or more than ``MAX_REPLICATIONS`` would be needed.
    """
    gap = abs(figure.mean - value)

    def decides(n: int) -> bool:
        return t_quantile((1 + figure.confidence) / 2, n - 1) * figure.sd / math.sqrt(n) < gap

    if gap == 0 or not decides(MAX_REPLICATIONS):
        return None
    low, high = figure.n, MAX_REPLICATIONS  # decides(high); the answer is in (low, high]
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if decides(middle) else (middle, high)
    return high


def verdict(checks: list[tuple[Interval, Target]], steady: bool) -> Verdict:
    """Feasible, infeasible or not yet known, from each figure's interval and its target.

    A check's interval *clears* its target when it lies wholly on the right side (at least:
    ``low >= value``; at most: ``high <= value``) and *misses* it when it lies wholly on the
    wrong side (at least: ``high < value``; at most: ``low > value``); otherwise the target is
    undecided. In this order:

    1. some check misses its target: INFEASIBLE (``undecided`` empty);
    2. the runs were not ``steady``: NOT_YET_KNOWN with ``longer_runs`` True and
       ``replications_needed`` None (more replications of runs that are still filling up
       would not help), ``undecided`` the undecided targets' names in the order given;
    3. every check clears its target: FEASIBLE;
    4. otherwise NOT_YET_KNOWN, ``undecided`` as above, ``replications_needed`` the largest
       ``replications_to_decide`` of the undecided checks (None if any of them is None).
    """

    # YOUR CODE HERE
    raise NotImplementedError("verdict() is not implemented yet")


def steady_state(requests: list[dict], start_ms: float, end_ms: float, tolerance: float) -> Steady:
    """Whether the backlog held still over the window ``[start_ms, end_ms)``.

    Split the window at its middle. The mean number of requests in the system over each half
    is ``area_under_n`` over that half (every request of the run counts, warm-up ones too)
    divided by the half's length. The run is steady when the second half's backlog is at most
    ``(1 + tolerance)`` times the first half's. A backlog that keeps growing means the run is
    overloaded or still filling up (its warm-up dominates), and a longer run would look worse.
    """
    # YOUR CODE HERE
    raise NotImplementedError("steady_state() is not implemented yet")


def replication(
    requests: list[dict],
    slo: Slo,
    warmup_requests: int,
    cooldown_requests: int,
    tolerance: float,
    passes=None,
) -> Replication:
    """One replication's figures, all over the protocol's measurement window.

    The window is ``measurement_window(arrival times of all the requests, warmup_requests,
    cooldown_requests)`` (given, from ``servesim.protocol``; it returns ``.start_ms`` and
    ``.end_ms``). Over it: ``goodput`` with the quality check ``passes``; the nearest-rank p99
    (``percentile`` from ``servesim.metrics``) of the TTFTs of the requests that arrived in the
    window, a request with no first token counting as infinitely late (``math.inf``), reported
    as None when that p99 is infinite; the share of the window's succeeded requests that pass
    the quality check (None when none succeeded; every request passes without ``passes``); and
    ``steady_state`` with ``tolerance``.
    """
    # YOUR CODE HERE
    raise NotImplementedError("replication() is not implemented yet")
