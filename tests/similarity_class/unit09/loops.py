"""Unit 09 (p99, prefill_amplification, waiting_share, mean_queue), written from the
handout: plain loops and running totals."""

import math

from measure import Ratio, first_steps, queue_intervals


def p99(values):
    if len(values) == 0:
        return None
    ordered = sorted(values)
    rank = math.ceil(0.99 * len(ordered))
    return ordered[rank - 1]


def prefill_amplification(run):
    executed = 0
    new_tokens = 0
    seen = set()
    inputs = {r["id"]: r["inputTokens"] for r in run["requests"]}
    for event in run["events"]:
        for chunk in event["prefill"]:
            cached = chunk.get("cached", 0)
            executed += chunk["tokens"]
            if chunk["id"] not in seen:
                seen.add(chunk["id"])
                new_tokens += inputs[chunk["id"]] - cached
    return Ratio(executed, new_tokens, "prefill tokens run / new prompt tokens")


def waiting_share(run):
    starts = first_steps(run)
    waited = 0.0
    resident = 0.0
    for req in run["requests"]:
        if req["id"] in starts:
            waited += starts[req["id"]] - req["arrivalMs"]
            resident += req["statusMs"] - req["arrivalMs"]
    return Ratio(waited, resident, "ms waiting / ms in the system")


def mean_queue(run, start_ms, end_ms):
    if end_ms <= start_ms:
        return 0.0
    total = 0.0
    for begin, end in queue_intervals(run):
        lo = max(begin, start_ms)
        hi = min(end, end_ms)
        if hi > lo:
            total += hi - lo
    return total / (end_ms - start_ms)
