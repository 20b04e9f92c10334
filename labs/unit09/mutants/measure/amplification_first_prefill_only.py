"""Mutant: recompute amplification counts each request's first prefill only, so the re-prefill
after a preemption is not executed work."""


def prefill_amplification(run):
    executed, new, seen = 0, 0, set()
    inputs = {r["id"]: r["inputTokens"] for r in run["requests"]}
    for event in run["events"]:
        for chunk in event["prefill"]:
            if chunk["id"] in seen:
                continue
            seen.add(chunk["id"])
            executed += chunk["tokens"]
            new += inputs[chunk["id"]] - chunk.get("cached", 0)
    return Ratio(executed, new, "prefill tokens executed / new prompt tokens")  # noqa: F821
