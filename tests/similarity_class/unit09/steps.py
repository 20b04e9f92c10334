"""Unit 09 (p99, prefill_amplification, waiting_share, mean_queue), written from the
handout: the queue read from queue_steps, counts kept per request."""

import math
from collections import defaultdict

from measure import Ratio, first_steps, queue_steps


def p99(values):
    n = len(values)
    if not n:
        return None
    k = max(1, math.ceil(n * 99 / 100))
    return sorted(values)[k - 1]


def prefill_amplification(run):
    ran = defaultdict(int)
    hit_at_start = {}
    for event in run["events"]:
        for piece in event["prefill"]:
            ran[piece["id"]] += piece["tokens"]
            hit_at_start.setdefault(piece["id"], piece.get("cached", 0))
    prompt = 0
    for request in run["requests"]:
        if request["id"] in hit_at_start:
            prompt += request["inputTokens"] - hit_at_start[request["id"]]
    return Ratio(sum(ran.values()), prompt, "prefill executed / prompt tokens new")


def waiting_share(run):
    start = first_steps(run)
    pairs = [
        (start[r["id"]] - r["arrivalMs"], r["statusMs"] - r["arrivalMs"])
        for r in run["requests"]
        if r["id"] in start
    ]
    return Ratio(sum(p[0] for p in pairs), sum(p[1] for p in pairs), "wait ms / residence ms")


def mean_queue(run, start_ms, end_ms):
    if not end_ms > start_ms:
        return 0.0
    area, length, since = 0.0, 0, start_ms
    for when, after in queue_steps(run):
        if when > end_ms:
            break
        if when > since:
            area += length * (when - since)
            since = when
        length = after
    area += length * (end_ms - since)
    return area / (end_ms - start_ms)
