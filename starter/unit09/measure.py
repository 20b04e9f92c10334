"""Unit 09 measurements: the evidence of exercise 31.12 and the diagnosis of 31.13.

Every function reads one run entry of a run file (``run["requests"]``, ``run["events"]``,
``run["device"]``; see ``schemas/run.schema.json``). A request record has ``id``,
``arrivalMs``, ``inputTokens``, ``status`` (``"completed"``, ``"rejected"`` or
``"cancelled"``), ``statusMs`` and ``tokenTimesMs``; an event has ``startMs``, ``endMs``,
``decode`` (ids) and ``prefill`` (chunks ``{"id", "fromToken", "tokens"}``, with ``cached``
positions when the prefix cache served the start of the prompt). A token is emitted at the
``endMs`` of the event that decoded it (or that held its request's last prefill token).

Runs of a streaming engine add, per request, ``pausedMs`` (the ``[start, end]`` intervals its
output buffer was full), ``bufferPeakBytes``, ``ackMs`` (when the client read the last event,
``None`` if it never read them all) and ``cancelReason`` (``"stalled"``: cancelled at the pause
deadline); the device has ``streamBufferBytes``. A run without ``streamBufferBytes`` has no
streaming evidence: ``slow_clients`` returns ``None`` and the slow-client rule cannot fire.

Every count is returned as a ``Ratio``: the numerator, the denominator and what both count.
Writing the denominator down is the point (section 31.7): "paused / streamed" and "paused / all
submitted" are different figures, and a report must say which one it is.
"""

from __future__ import annotations

import math  # noqa: F401, RUF100 (for p99())
import statistics
from dataclasses import dataclass, field
from enum import Enum

COMPLETED, REJECTED, CANCELLED = "completed", "rejected", "cancelled"
MIN_REQUESTS = 20  # fewer requests with a first token: not enough evidence for a p99
QUEUE_GROWTH = 1.5  # overload: the second half's mean queue is at least this times the first's
MIN_QUEUE = 2.0  # ... and at least this many requests wait, on average, in the second half
WAITING_SHARE = 0.25  # ... and waiting is at least this share of the requests' residence
REJECTED_SHARE = 0.05  # overload under admission control: at least this share rejected
ITL_GROWTH = 3.0  # a long gap: more than this times the median gap of decode-only steps
BLOCKED_SHARE = 0.8  # prefill blocking: at least this share of the long gaps in prefill steps
PAUSED_SHARE = 0.01  # slow clients: more than this share of the streamed requests paused
TAIL_GROWTH = 2.0  # against a baseline: a p99 more than this times the baseline's has grown


@dataclass(frozen=True)
class Ratio:
    """A count and its denominator, with what they count (``num`` of ``den`` ``what``).

    ``what`` is a label for the reader, in any words: graded answers hold ``num`` and ``den``
    only (``measure_check.py`` leaves labels out), so the numbers alone earn the points."""

    num: float
    den: float
    what: str

    @property
    def value(self) -> float | None:
        """``num / den``; ``None`` when the denominator is 0 (no population, no figure)."""
        return self.num / self.den if self.den else None


@dataclass(frozen=True)
class ItlSplit:
    """The inter-token gaps of a run, split by whether the step that ended them carried prefill
    tokens. Gaps that overlap a pause of their request's stream are in neither of those lists
    but in ``paused``: a full buffer explains them, not the schedule."""

    with_prefill: list[float]
    without_prefill: list[float]
    paused: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class SlowClients:
    """Streaming evidence; every share is over the requests that streamed (got a token)."""

    paused: Ratio  # requests whose buffer filled at least once / streamed
    stalled: Ratio  # cancelled at the pause deadline / streamed
    buffer_full: Ratio  # requests whose buffer could not take another event / streamed
    peak_bytes: int  # the largest bufferPeakBytes of the run
    capacity_bytes: int  # streamBufferBytes


@dataclass(frozen=True)
class Evidence:
    """Everything ``diagnose`` decides from, for one run."""

    served: int  # requests with a first token (the population of the TTFT tail)
    p99_ttft_ms: float | None
    p99_itl_ms: float | None  # every gap, those across a pause of the stream included
    p99_schedule_itl_ms: float | None  # the gaps not across a pause: what the schedule made
    p99_wait_ms: float | None  # first step start - arrival, over the prefilled requests
    rejected: Ratio  # rejected / submitted
    amplification: Ratio  # executed prefill tokens / new prompt tokens
    waiting: Ratio  # ms spent waiting for a first step / ms of residence
    queue_first_half: float  # mean queue length over the first half of the arrival span
    queue_second_half: float
    decode_only_median_itl_ms: float | None
    long_gaps_in_prefill: Ratio  # long gaps ended by a step with prefill / long gaps
    slow: SlowClients | None


class Cause(Enum):
    OVERLOAD = "overload"
    PREFILL_BLOCKING = "prefill blocking decode"
    SLOW_CLIENTS = "slow clients"
    NONE = "none"
    NOT_ENOUGH_EVIDENCE = "not enough evidence"


@dataclass(frozen=True)
class Diagnosis:
    """The cause named, the evidence behind it, the action it implies, any other cause whose
    rule also fired (a mixed run, in the order the rules are tried), and one line saying which
    numbers decided it."""

    cause: Cause
    evidence: Evidence | None
    action: str
    also: tuple[Cause, ...] = field(default=())
    why: str = ""


ACTIONS = {
    Cause.OVERLOAD: (
        "arrivals exceed what the device serves: add capacity for the saturated stage, and "
        "until it is warm apply admission control (a queue cap or deadline-based rejection) "
        "so the backlog stops growing; check that it drains"
    ),
    Cause.PREFILL_BLOCKING: (
        "long prompts stall decoding streams: chunk prefill (a smaller token budget per step) "
        "or cap the prefill share of a step, keeping enough prefill to admit new requests"
    ),
    Cause.SLOW_CLIENTS: (
        "output waits on slow readers: bound each stream's buffer, pause generation when it is "
        "full, cancel at the pause deadline and release the request's pages and slot"
    ),
    Cause.NONE: "the tail did not grow against the baseline: change nothing",
    Cause.NOT_ENOUGH_EVIDENCE: (
        "collect more: a longer open-loop run, a baseline run, or streaming fields"
    ),
}


def p99(values: list[float]) -> float | None:
    """The nearest-rank 99th percentile: the value at rank ceil(0.99 n) (1-based) of the
    sorted values, the smallest value with at least 99 % of the values at or below it. With
    100 values that is the 99th smallest, with 101 the 100th. ``None`` for no values."""
    # YOUR CODE HERE
    raise NotImplementedError("p99() is not implemented yet")


def first_steps(run: dict) -> dict[str, float]:
    """Each request's first service: the ``startMs`` of the first event with a prefill chunk of
    it (given). Requests never prefilled (rejected, cancelled while waiting) are absent."""
    starts: dict[str, float] = {}
    for event in run["events"]:
        for chunk in event["prefill"]:
            starts.setdefault(chunk["id"], event["startMs"])
    return starts


def prefill_amplification(run: dict) -> Ratio:
    """Prefill tokens executed / new prompt tokens (the recompute amplification of 31.12).

    Executed: the ``tokens`` of every prefill chunk of every event, recompute after a
    preemption included (a re-prefill runs the prompt and the tokens emitted so far again).
    Positions a chunk took from the prefix cache (``cached``) were not executed: they are in
    neither count. New prompt tokens: for each request that was prefilled at all, its
    ``inputTokens`` less the ``cached`` positions of its first chunk. 1.0 means no prompt token
    ran twice.
    """
    # YOUR CODE HERE
    raise NotImplementedError("prefill_amplification() is not implemented yet")


def waiting_share(run: dict) -> Ratio:
    """Time spent waiting for the first step / time in the system, over the requests that were
    prefilled: sum of (first step start - arrivalMs) over sum of (statusMs - arrivalMs)."""
    # YOUR CODE HERE
    raise NotImplementedError("waiting_share() is not implemented yet")


def queue_intervals(run: dict) -> list[tuple[float, float]]:
    """When each request waited for its first step: ``[arrivalMs, first step start)``, or
    ``[arrivalMs, statusMs)`` for a request never prefilled (given)."""
    starts = first_steps(run)
    return [(r["arrivalMs"], starts.get(r["id"], r["statusMs"])) for r in run["requests"]]


def queue_steps(run: dict) -> list[tuple[float, int]]:
    """The queue length over time (given): ``(time, requests waiting for their first step
    from then on)`` at every time it changes, in time order, from ``queue_intervals``."""
    changes: dict[float, int] = {}
    for begin, end in queue_intervals(run):
        if end > begin:
            changes[begin] = changes.get(begin, 0) + 1
            changes[end] = changes.get(end, 0) - 1
    steps, length = [], 0
    for when in sorted(changes):
        length += changes[when]
        steps.append((when, length))
    return steps


def mean_queue(run: dict, start_ms: float, end_ms: float) -> float:
    """The time-weighted mean number of requests waiting for their first step over
    ``[start_ms, end_ms]``: the sum of each ``queue_intervals`` interval clipped to the window,
    divided by the window's length. An interval that starts before the window or ends after it
    counts only inside it. 0 for an empty window (``end_ms <= start_ms``)."""
    # YOUR CODE HERE
    raise NotImplementedError("mean_queue() is not implemented yet")


def itl_split(run: dict) -> ItlSplit:
    """Every inter-token gap u_j - u_(j-1) (j >= 2) of every request, filed by the event that
    ended it (the event whose ``endMs`` is u_j): ``with_prefill`` when that event has a prefill
    chunk, ``without_prefill`` otherwise. A gap that overlaps one of the request's
    ``pausedMs`` intervals (``start < u_j`` and ``end > u_(j-1)``; an ``end`` of ``None`` is a
    pause that never ended) goes in ``paused`` instead.
    """
    # YOUR CODE HERE
    raise NotImplementedError("itl_split() is not implemented yet")


def slow_clients(run: dict) -> SlowClients | None:
    """The streaming evidence, or ``None`` when the device has no ``streamBufferBytes``.

    Streamed: the requests with at least one token. Over them: those with a non-empty
    ``pausedMs``; those cancelled with ``cancelReason`` ``"stalled"``; those whose buffer
    filled: ``bufferPeakBytes`` plus one event (``streamEventBytes``, 0 if absent) is more
    than ``streamBufferBytes``. Rejected requests never streamed and are in no denominator.
    """
    # YOUR CODE HERE
    raise NotImplementedError("slow_clients() is not implemented yet")


def evidence(run: dict) -> Evidence:
    """All the figures of one run (given: it uses the functions above).

    The TTFT tail is over the requests with a first token, the ITL tail over every gap (token
    weighted, the gaps across pauses included: the client waited for them too). The queue
    halves split the arrival span [first arrival, last arrival] at its middle: an open-loop
    run whose backlog grows shows it there. A long gap is one above ``ITL_GROWTH`` times the
    median gap of steps without prefill (pauses left out: the schedule's gaps only).
    """
    requests = run["requests"]
    ttfts = [r["tokenTimesMs"][0] - r["arrivalMs"] for r in requests if r["tokenTimesMs"]]
    starts = first_steps(run)
    waits = [starts[r["id"]] - r["arrivalMs"] for r in requests if r["id"] in starts]
    rejected = sum(1 for r in requests if r["status"] == REJECTED)
    split = itl_split(run)
    scheduled = split.with_prefill + split.without_prefill
    arrivals = [r["arrivalMs"] for r in requests]
    first, last = (min(arrivals), max(arrivals)) if arrivals else (0.0, 0.0)
    middle = (first + last) / 2
    median = statistics.median(split.without_prefill) if split.without_prefill else None
    long_with = long_all = 0
    if median is not None:
        long_with = sum(1 for g in split.with_prefill if g > ITL_GROWTH * median)
        long_all = long_with + sum(1 for g in split.without_prefill if g > ITL_GROWTH * median)
    return Evidence(
        served=len(ttfts),
        p99_ttft_ms=p99(ttfts),
        p99_itl_ms=p99(scheduled + split.paused),
        p99_schedule_itl_ms=p99(scheduled),
        p99_wait_ms=p99(waits),
        rejected=Ratio(rejected, len(requests), "requests rejected / requests submitted"),
        amplification=prefill_amplification(run),
        waiting=waiting_share(run),
        queue_first_half=mean_queue(run, first, middle),
        queue_second_half=mean_queue(run, middle, last),
        decode_only_median_itl_ms=median,
        long_gaps_in_prefill=Ratio(long_with, long_all, "long gaps in prefill steps / long gaps"),
        slow=slow_clients(run),
    )


def diagnose(run: dict, baseline: dict | None = None) -> Diagnosis:
    """Name the cause of a grown tail (exercise 31.13), with its evidence and action.

    ``baseline``: a run of the same device and policy under light load (or before the tail
    grew). Rules, on ``evidence(run)``, tried in this order; the first that fires is the
    ``cause``, the others that fire are listed in ``also``:

    0. fewer than ``MIN_REQUESTS`` requests got a first token: NOT_ENOUGH_EVIDENCE.
    1. OVERLOAD: the queue grows over the arrival span (second half's mean queue at least
       ``QUEUE_GROWTH`` times the first half's and at least ``MIN_QUEUE``) and waiting is at
       least ``WAITING_SHARE`` of residence; or, under admission control, which holds the
       queue still, at least ``REJECTED_SHARE`` of the submitted requests were rejected.
    2. PREFILL_BLOCKING: the p99 of the schedule's gaps (those not across a pause) exceeds
       ``ITL_GROWTH`` times the median decode-only gap and at least ``BLOCKED_SHARE`` of the
       long gaps were ended by steps with prefill.
    3. SLOW_CLIENTS: streaming evidence exists and more than ``PAUSED_SHARE`` of the streamed
       requests paused, or any was cancelled as stalled.
    4. No rule fired: without a baseline, NOT_ENOUGH_EVIDENCE (nothing says whether the tail
       grew). With one, the tail has grown when the p99 wait for a first step or the p99 ITL
       is more than ``TAIL_GROWTH`` times the larger of the baseline's p99 of that figure and
       the baseline's p99 ITL (a wait of a step or two is not a grown tail, however small the
       baseline's wait was):
       NONE when neither grew, NOT_ENOUGH_EVIDENCE otherwise (a grown tail no rule explains).
       The wait, not the TTFT, because a long prompt's own prefill is in its TTFT however
       well it is scheduled (chunking it even lengthens it, section 31.3).
    """
    # YOUR CODE HERE
    raise NotImplementedError("diagnose() is not implemented yet")
