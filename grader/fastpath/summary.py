"""Run summaries over millions of token times with numpy, equal to ``servesim.metrics``.

``servesim.metrics.summarize`` walks Python lists; here the same figures come from arrays. A
request's decode tokens are contiguous ranges of the decode steps (one per entry into the running
set), so its inter-token gaps are, range by range, a resume gap (after a preemption), an entry
gap (first decode minus first token) and a slice of the gaps between consecutive decode steps:
the same IEEE subtractions the lab makes, so the same values.
Percentiles are order statistics at the nearest ranks, read off the distinct step gaps weighted
by how many requests span each of them (a few thousand values instead of millions); every mean
is Python's own ``sum`` over the values in the lab's order, so the result is the same to the
last bit as the lab's summary of the same run.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

PERCENTILES = (50, 90, 99)


def _stats(count: int, mean: float, nth) -> dict:
    """The distribution dict; ``nth(rank)`` is the value of 0-based rank ``rank``."""
    ranks = [max(1, math.ceil(p / 100 * count)) - 1 for p in PERCENTILES]
    stats = {"count": count, "mean": mean}
    stats |= {f"p{p}": nth(r) for p, r in zip(PERCENTILES, ranks)}
    stats["max"] = nth(count - 1)
    return stats


def distribution(values: np.ndarray) -> dict | None:
    """``servesim.metrics.distribution`` of ``values`` (in the lab's order, for the mean)."""
    count = len(values)
    if not count:
        return None
    ranks = [max(1, math.ceil(p / 100 * count)) - 1 for p in PERCENTILES]
    ordered = np.partition(values, sorted({*ranks, count - 1}))
    return _stats(count, python_sum(values) / count, lambda rank: float(ordered[rank]))


def python_sum(values: np.ndarray) -> float:
    """What Python's ``sum`` returns for these floats in this order."""
    return python_sum_blocks([values])


def python_sum_blocks(blocks: Iterable[np.ndarray]) -> float:
    """What Python's ``sum`` returns for the floats of ``blocks``, one after the other.

    Before 3.12 ``sum`` adds floats one by one, as ``numpy.add.accumulate`` does; from 3.12 on
    it compensates rounding, so the values go through one ``sum`` itself. Either way only one
    block (and its running sums, ``_BLOCK`` at a time) is in memory at once.
    """
    if sys.version_info >= (3, 12):
        return sum(itertools.chain.from_iterable(block.tolist() for block in blocks))
    total = 0  # Python's start value
    for values in blocks:
        for at in range(0, len(values), _BLOCK):
            chunk = values[at : at + _BLOCK]
            part = np.empty(len(chunk) + 1)
            part[0], part[1:] = total, chunk
            total = float(np.add.accumulate(part, out=part)[-1])
    return total


_BLOCK = 1 << 18


@dataclass(frozen=True)
class Gaps:
    """Every inter-token gap of a run, in two forms.

    ``ordered()``: blocks of the gaps request by request in trace order (what the lab's mean
    adds up), made on demand so that the millions of gaps never sit in memory at once;
    ``values`` with ``weights``: each distinct source of a gap (a step-to-step gap or a
    request's entry gap) and how many gaps it stands for (what the order statistics read).
    """

    count: int
    ordered: Callable[[], Iterator[np.ndarray]]
    values: np.ndarray
    weights: np.ndarray

    def distribution(self) -> dict | None:
        """``servesim.metrics.distribution`` of every gap."""
        if not self.count:
            return None
        order = np.argsort(self.values, kind="stable")
        values, reach = self.values[order], np.cumsum(self.weights[order])

        def nth(rank: int) -> float:  # the first value whose cumulated weight passes ``rank``
            return float(values[np.searchsorted(reach, rank, side="right")])

        return _stats(self.count, python_sum_blocks(self.ordered()) / self.count, nth)

    @property
    def max(self) -> float | None:
        return float(self.values[self.weights > 0].max()) if self.count else None


def request_tokens(ends, decode_steps, slices, output):
    """Token-time arrays of a run given by its slices (``servesim.compact``).

    ``slices``: ``[request, step, decodeIndex, count]`` rows, by request (trace order) and then
    in time order, at least one per request. A request's gaps are, slice by slice, the gap from
    its previous slice's last token (a preempted request resuming), its entry gap (first decode
    minus the slice's first token) and a run of gaps between consecutive decode steps.
    Returns ``(first, last, count, gaps)``: each request's first and last token time and its
    number of gaps (trace order), and every inter-token gap (``Gaps``).
    """
    ends = np.asarray(ends, dtype=np.float64)
    decode_ends = ends[np.asarray(decode_steps, dtype=np.int64)]
    rows = np.asarray(slices, dtype=np.int64).reshape(-1, 4)
    owner, start, span = rows[:, 0], rows[:, 2], rows[:, 3]
    opened = ends[rows[:, 1]]  # each slice's first token
    has = span > 0
    closed = opened.copy()  # each slice's last token
    closed[has] = decode_ends[start[has] + span[has] - 1]
    resumes = np.zeros(len(rows), dtype=bool)  # the slice follows one of the same request
    resumes[1:] = owner[1:] == owner[:-1]
    lasts = np.ones(len(rows), dtype=bool)
    lasts[:-1] = ~resumes[1:]
    first, last = opened[~resumes], closed[lasts]
    count = np.asarray(output, dtype=np.int64) - 1

    step_gaps = np.zeros_like(decode_ends)  # decode step k's end minus decode step k-1's
    np.subtract(decode_ends[1:], decode_ends[:-1], out=step_gaps[1:])
    lead = np.zeros(len(rows))  # each slice's resume gap (if it resumes), then its entry gap
    lead_resume = np.zeros(len(rows))
    lead_resume[resumes] = opened[resumes] - closed[np.flatnonzero(resumes) - 1]
    lead[has] = decode_ends[start[has]] - opened[has]
    width = span + resumes  # each slice's gaps: [resume], [entry, step gaps start+1 ..]
    total = int(width.sum())

    def ordered() -> Iterator[np.ndarray]:
        """The gaps in the lab's order, a block of slices at a time."""
        reach = np.cumsum(width)
        cuts = np.searchsorted(reach, np.arange(_BLOCK, total, _BLOCK), side="left")
        for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), len(rows)]):
            yield _slice_gaps(
                step_gaps, start[a:b], span[a:b], resumes[a:b], lead_resume[a:b], lead[a:b]
            )

    steps = len(decode_ends)
    spanning = np.cumsum(  # how many slices have the gap ending at decode step k
        np.bincount(start[has] + 1, minlength=steps + 1)
        - np.bincount(start[has] + span[has], minlength=steps + 1)
    )[1:steps]
    values = np.concatenate((step_gaps[1:], lead[has], lead_resume[resumes]))
    weights = np.concatenate((spanning, np.ones(int(has.sum() + resumes.sum()), dtype=np.int64)))
    return first, last, count, Gaps(total, ordered, values, weights)


def _slice_gaps(step_gaps, start, span, resumes, resume_gap, entry_gap) -> np.ndarray:
    """The gaps of consecutive slices in order: per slice its resume gap (if it resumes),
    its entry gap (if it decodes) and the step gaps of its decode range after the first.

    Built by index arithmetic, not slice by slice: each slice's step gaps are a run of
    consecutive indices into ``step_gaps``, and its one or two leading gaps go in front."""
    has = span > 0
    runs = np.maximum(span - 1, 0)  # step gaps of each slice
    heads = resumes.astype(np.int64) + has  # its leading gaps
    width = heads + runs
    out = np.empty(int(width.sum()))
    first = np.cumsum(width) - width  # where each slice's gaps begin
    out[first[resumes]] = resume_gap[resumes]
    out[(first + resumes)[has]] = entry_gap[has]
    lead = np.zeros(len(out), dtype=bool)
    lead[first[resumes]] = True
    lead[(first + resumes)[has]] = True
    total = int(runs.sum())
    # index k of slice i's run: start_i + 1 + k, made as one ramp minus each run's offset
    shift = np.repeat(start + 1 - (np.cumsum(runs) - runs), runs)
    out[~lead] = step_gaps[np.arange(total) + shift]
    return out


def distinct(values: np.ndarray) -> int:
    """How many distinct values ``values`` holds (``len(set(values))``)."""
    ordered = np.sort(values)
    return int(np.count_nonzero(ordered[1:] != ordered[:-1])) + (len(ordered) > 0)


def summarize(arrival, starts, ends, decode_steps, chunk_steps, tokens) -> dict:
    """``servesim.metrics.summarize`` of a run given as arrays.

    ``tokens`` is ``request_tokens``'s result; ``chunk_steps`` the step of every chunk.
    """
    first, last, count, gaps = tokens
    arrival = np.asarray(arrival, dtype=np.float64)
    defined = count > 0
    tpot = (last[defined] - first[defined]) / count[defined]
    starts, ends = np.asarray(starts), np.asarray(ends)
    return {
        "requests": len(first),
        "allDoneMs": float(last.max()),
        "submissions": len(ends),
        "prefillSubmissions": distinct(np.asarray(chunk_steps, dtype=np.int64)),
        "decodeSubmissions": len(decode_steps),
        "busyMs": python_sum(ends - starts),
        "ttftMs": distribution(first - arrival),
        "itlMs": gaps.distribution(),
        "tpotMs": distribution(tpot),
        "e2eMs": distribution(last - arrival),
        "maxItlMs": gaps.max,
        "weighting": {
            "ttftMs": "request",
            "itlMs": "token gap",
            "tpotMs": "request",
            "e2eMs": "request",
        },
        "percentile": "nearest-rank",
    }
