"""Mutant: recompute amplification's denominator is every prompt token, prefix hits included,
so a cache hit looks like less than one execution per prompt token."""


def prefill_amplification(run):
    executed = sum(c["tokens"] for e in run["events"] for c in e["prefill"])
    started = {c["id"] for e in run["events"] for c in e["prefill"]}
    new = sum(r["inputTokens"] for r in run["requests"] if r["id"] in started)
    return Ratio(executed, new, "prefill tokens executed / prompt tokens")  # noqa: F821
