"""The run entry of a planner run without numpy: each request enters the running set once.

A planner's run (``executor``, ``budgeted``) has one slice per request and completes every
request, so its summary needs no preemption bookkeeping: a request's token times are its
first token's step end and then a contiguous range of decode-step ends. This module makes the
compact entry and its summary from the columns with the standard library only (importing numpy
costs more than the whole computation on the Azure job), with the lab's arithmetic in the lab's
order, so the figures are the same to the last bit as ``servesim.metrics.summarize`` of the
expanded run (``tests/grader/test_fastpath.py`` compares them for every planner).
"""

from __future__ import annotations

import math
import sys
from array import array
from bisect import bisect_right
from itertools import accumulate, chain
from operator import ne, sub

from .columns import Table


def slices_of(steps, output: array) -> Table:
    """``[request, step, decodeIndex, count]`` of each request (trace order), one row each."""
    count = len(output)
    flat = array("q", bytes(32 * count))
    flat[0::4] = array("q", range(count))
    flat[1::4], flat[2::4] = steps.first_step, steps.first_decode
    flat[3::4] = array("q", [n - 1 for n in output])
    return Table(4, flat)


def summarize(arrival: array, steps, output: array) -> tuple[dict, list[float]]:
    """``(figures, last)``: ``servesim.metrics.summarize``'s figures of the run, and each
    request's last token time (trace order)."""
    ends, decode_steps = steps.ends, steps.decode_steps
    # lists, not columns: ``sum`` of a slice of Python floats reads them as they are, where an
    # ``array`` slice makes a float object per value (millions of gaps: half the time)
    decode_ends = list(map(ends.__getitem__, decode_steps))
    step_gaps = [0.0, *map(sub, decode_ends[1:], decode_ends[:-1])]  # step k's end - step k-1's
    first = list(map(ends.__getitem__, steps.first_step))
    starts, spans = steps.first_decode, [n - 1 for n in output]
    last = [
        decode_ends[at + span - 1] if span else opened
        for opened, at, span in zip(first, starts, spans)
    ]
    gap_count = sum(spans)
    itl = None
    if gap_count:
        weights = _gap_weights(step_gaps, starts, spans)
        for opened, at, span in zip(first, starts, spans):  # each request's first gap
            if span:
                value = decode_ends[at] - opened
                weights[value] = weights.get(value, 0) + 1
        mean = _gap_sum(first, decode_ends, step_gaps, starts, spans) / gap_count
        itl = _weighted(gap_count, mean, weights)
    # The per-step lists go before the per-request ones are made, and each of those is freed
    # once its distribution is taken: a million requests' summary holds a few lists at a time.
    del decode_ends, step_gaps
    chunk_steps = steps.chunks.flat[0::4]
    figures = {
        "requests": len(first),
        "allDoneMs": max(last),
        "submissions": len(ends),
        "prefillSubmissions": sum(map(ne, chunk_steps[1:], chunk_steps[:-1])) + bool(chunk_steps),
        "decodeSubmissions": len(decode_steps),
        "busyMs": sum(map(sub, ends, steps.starts)),
        "ttftMs": distribution(list(map(sub, first, arrival))),
        "itlMs": itl,
        "tpotMs": distribution([(b - a) / n for a, b, n in zip(first, last, spans) if n > 0]),
        "e2eMs": distribution(list(map(sub, last, arrival))),
        "maxItlMs": itl["max"] if itl else None,
        "weighting": {
            "ttftMs": "request",
            "itlMs": "token gap",
            "tpotMs": "request",
            "e2eMs": "request",
        },
        "percentile": "nearest-rank",
    }
    return figures, last


PERCENTILES = (50, 90, 99)


def _gap_sum(first, decode_ends, step_gaps, starts, spans) -> float:
    """What Python's ``sum`` returns over every gap in the lab's order: request by request,
    its entry gap, then its range of step gaps."""
    if sys.version_info >= (3, 12):  # ``sum`` compensates rounding: one sum over all of them
        return sum(
            chain.from_iterable(
                chain((decode_ends[at] - opened,), step_gaps[at + 1 : at + span])
                for opened, at, span in zip(first, starts, spans)
                if span
            )
        )
    total = 0  # ``sum``'s start; before 3.12 it adds floats one by one, so each request's gaps
    for opened, at, span in zip(first, starts, spans):  # are added onto the running total
        if span:
            total = sum(step_gaps[at + 1 : at + span], total + (decode_ends[at] - opened))
    return total


def _ranks(count: int) -> list[int]:
    """0-based nearest ranks of ``PERCENTILES`` (``servesim.metrics.percentile``)."""
    return [max(1, math.ceil(p / 100 * count)) - 1 for p in PERCENTILES]


def distribution(values: list[float]) -> dict | None:
    """``servesim.metrics.distribution(values)``, sorting once."""
    if not values:
        return None
    count, ordered = len(values), sorted(values)
    stats = {"count": count, "mean": sum(values) / count}
    stats |= {f"p{p}": ordered[r] for p, r in zip(PERCENTILES, _ranks(count))}
    stats["max"] = max(values)
    return stats


def _gap_weights(step_gaps: list[float], starts, spans) -> dict[float, int]:
    """Each distinct step gap and how many request gaps it is (requests spanning it)."""
    change = [0] * (len(step_gaps) + 1)
    for at, span in zip(starts, spans):
        if span > 1:  # gaps of decode steps at + 1 .. at + span - 1
            change[at + 1] += 1
            change[at + span] -= 1
    weights: dict[float, int] = {}
    for value, weight in zip(step_gaps, accumulate(change)):
        if weight:
            weights[value] = weights.get(value, 0) + weight
    return weights


def _weighted(count: int, mean: float, weights: dict[float, int]) -> dict:
    """The distribution of ``count`` values given as each distinct value's weight (how many
    times it occurs); ``mean`` is computed by the caller, in the lab's order."""
    values = sorted(weights)
    reach = list(accumulate(map(weights.__getitem__, values)))

    def nth(rank: int) -> float:  # the first value whose cumulated weight passes ``rank``
        return values[bisect_right(reach, rank)]

    stats = {"count": count, "mean": mean}
    stats |= {f"p{p}": nth(r) for p, r in zip(PERCENTILES, _ranks(count))}
    stats["max"] = values[-1]
    return stats
