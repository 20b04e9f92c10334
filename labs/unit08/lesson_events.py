"""Reading a run's events: what each step left in every KV cache, the pages held over time,
the phase each preempted request was in, and the padding a static batch's prefills carry.

Everything here is rebuilt from a run's ``events`` and ``requests`` alone (no engine state),
so the lesson's narratives say what the run file says.
"""

from __future__ import annotations

import math


def caches(run: dict):
    """Each event with every holder's KV cache (positions) after it, from the events alone.

    A holder's cache is its prefilled tokens plus one per decode; a preempted one drops it at
    the start of the step; a request that left (completed, cancelled) at a step's end frees it.
    The dict is the same object each time: copy it to keep a step's state.
    """
    left = {r["id"]: r["statusMs"] for r in run["requests"] if r["status"] != "rejected"}
    cache: dict[str, int] = {}
    for event in run["events"]:
        for rid in event["preempt"]:
            cache.pop(rid, None)
        for chunk in event["prefill"]:
            cache[chunk["id"]] = cache.get(chunk["id"], 0) + chunk["tokens"]
        for rid in event["decode"]:
            cache[rid] += 1
        for rid in [r for r in cache if left[r] == event["endMs"]]:
            del cache[rid]
        yield event, cache


def caches_before(run: dict, index: int) -> dict[str, int]:
    """Positions in each holder's KV cache when event ``index`` starts."""
    cache: dict[str, int] = {}
    for event, after in caches(run):
        if event["index"] == index:
            break
        cache = dict(after)
    return cache


def pages_over_time(run: dict, page_tokens: int) -> list[tuple[float, int]]:
    """(step end, KV pages held after the step) rebuilt from the run's events alone."""
    points = [(0.0, 0)]
    for event, cache in caches(run):
        points.append((event["endMs"], sum(math.ceil(c / page_tokens) for c in cache.values())))
    return points


def victim_phases(run: dict) -> dict[str, int]:
    """How many preemptions of ``run`` threw out a request that was decoding (its last step
    before the preemption gave it a decode token) and how many one still in (re)prefill."""
    last: dict[str, str] = {}
    counts = {"decoding": 0, "prefilling": 0}
    for event in run["events"]:
        for rid in event["preempt"]:
            counts["decoding" if last.get(rid) == "decode" else "prefilling"] += 1
        for chunk in event["prefill"]:
            last[chunk["id"]] = "prefill"
        for rid in event["decode"]:
            last[rid] = "decode"
    return counts


def padding_share(run: dict) -> float:
    """The share of padded prompt positions over every prefill step, were each step padded to its
    longest prompt (1 - sum P / (n P_max) summed over steps: equation 31.3's linear ratio)."""
    size = {r["id"]: r["inputTokens"] for r in run["requests"]}
    used = padded = 0
    for event in run["events"]:
        prompts = [size[c["id"]] for c in event["prefill"]]
        if prompts:
            used, padded = used + sum(prompts), padded + len(prompts) * max(prompts)
    return 1 - used / padded if padded else 0.0
