"""Run summaries over millions of token times with numpy, equal to ``servesim.metrics``.

``servesim.metrics.summarize`` walks Python lists; here the same figures come from arrays:
token times are gathered from the step end times by each request's slices, gaps and
per-request metrics are array differences (the same IEEE operations, so the same values),
percentiles are order statistics (``numpy.partition``) at the nearest ranks, and every mean
is Python's own ``sum`` over the values in the lab's order, so the result is the same to the
last bit as the lab's summary of the same run.
"""

from __future__ import annotations

import math
import sys

import numpy as np

PERCENTILES = (50, 90, 99)


def distribution(values: np.ndarray) -> dict | None:
    """``servesim.metrics.distribution`` of ``values`` (in the lab's order, for the mean)."""
    count = len(values)
    if not count:
        return None
    ranks = [max(1, math.ceil(p / 100 * count)) - 1 for p in PERCENTILES]
    ordered = np.partition(values, sorted({*ranks, count - 1}))
    stats = {"count": count, "mean": python_sum(values) / count}
    stats |= {f"p{p}": float(ordered[r]) for p, r in zip(PERCENTILES, ranks)}
    stats["max"] = float(ordered[count - 1])
    return stats


def python_sum(values: np.ndarray) -> float:
    """What Python's ``sum`` returns for these floats in this order.

    Before 3.12 ``sum`` adds floats one by one, as ``numpy.add.accumulate`` does; from 3.12 on
    it compensates rounding, so the values go through ``sum`` itself.
    """
    if sys.version_info >= (3, 12):
        return sum(values.tolist())
    total = 0  # Python's start value; blocks bound the memory of the running sums
    for block in range(0, len(values), _BLOCK):
        head = np.array([total], dtype=np.float64)
        total = float(np.add.accumulate(np.concatenate((head, values[block : block + _BLOCK])))[-1])
    return total


_BLOCK = 1 << 18


def request_tokens(ends, decode_steps, first_step, first_decode, output):
    """Token-time arrays of a run whose requests each entered the running set once.

    Returns ``(first, last, gaps, count)``: each request's first and last token time and its
    number of gaps (trace order), and every inter-token gap, request by request in trace order.
    """
    ends = np.asarray(ends, dtype=np.float64)
    decode_ends = ends[np.asarray(decode_steps, dtype=np.int64)]
    first = ends[np.asarray(first_step, dtype=np.int64)]
    count = np.asarray(output, dtype=np.int64) - 1
    offsets = np.cumsum(count) - count
    total = int(count.sum())
    index = np.repeat(np.asarray(first_decode, dtype=np.int64) - offsets, count)
    index += np.arange(total)
    times = decode_ends[index]
    del index
    gaps = np.empty_like(times)
    np.subtract(times[1:], times[:-1], out=gaps[1:])
    has = count > 0
    starts = offsets[has]  # each request's first decode follows its first token
    gaps[starts] = times[starts] - first[has]
    last = first.copy()
    last[has] = times[starts + count[has] - 1]
    return first, last, gaps, count


def summarize(arrival, starts, ends, decode_steps, chunk_steps, tokens) -> dict:
    """``servesim.metrics.summarize`` of a run given as arrays.

    ``tokens`` is ``request_tokens``'s result; ``chunk_steps`` the step of every chunk.
    """
    first, last, gaps, count = tokens
    arrival = np.asarray(arrival, dtype=np.float64)
    defined = count > 0
    tpot = (last[defined] - first[defined]) / count[defined]
    starts, ends = np.asarray(starts), np.asarray(ends)
    return {
        "requests": len(first),
        "allDoneMs": float(last.max()),
        "submissions": len(ends),
        "prefillSubmissions": len(set(chunk_steps)),
        "decodeSubmissions": len(decode_steps),
        "busyMs": python_sum(ends - starts),
        "ttftMs": distribution(first - arrival),
        "itlMs": distribution(gaps),
        "tpotMs": distribution(tpot),
        "e2eMs": distribution(last - arrival),
        "maxItlMs": float(gaps.max()) if len(gaps) else None,
        "weighting": {
            "ttftMs": "request",
            "itlMs": "token gap",
            "tpotMs": "request",
            "e2eMs": "request",
        },
        "percentile": "nearest-rank",
    }
