"""Unit 09 (p99, prefill_amplification, waiting_share, mean_queue), written from the
handout: sums over generator expressions."""

from math import ceil

from measure import Ratio, first_steps, queue_intervals


def p99(values):
    return sorted(values)[ceil(len(values) * 0.99) - 1] if values else None


def prefill_amplification(run):
    chunks = [c for e in run["events"] for c in e["prefill"]]
    first = {}
    for c in chunks:
        first.setdefault(c["id"], c)
    by_id = {r["id"]: r for r in run["requests"]}
    ran = sum(c["tokens"] for c in chunks)
    fresh = sum(by_id[i]["inputTokens"] - c.get("cached", 0) for i, c in first.items())
    return Ratio(ran, fresh, "executed prefill tokens per new prompt token")


def waiting_share(run):
    begun = first_steps(run)
    served = [r for r in run["requests"] if r["id"] in begun]
    queued = sum(begun[r["id"]] - r["arrivalMs"] for r in served)
    stayed = sum(r["statusMs"] - r["arrivalMs"] for r in served)
    return Ratio(queued, stayed, "waiting over residence, ms")


def mean_queue(run, start_ms, end_ms):
    width = end_ms - start_ms
    if width <= 0:
        return 0
    inside = (min(b, end_ms) - max(a, start_ms) for a, b in queue_intervals(run))
    return sum(d for d in inside if d > 0) / width
