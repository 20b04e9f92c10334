"""Mutant: recompute amplification counts the positions a prefix hit served (``cached``) as
executed prefill tokens."""


def prefill_amplification(run):
    executed, new, seen = 0, 0, set()
    inputs = {r["id"]: r["inputTokens"] for r in run["requests"]}
    for event in run["events"]:
        for chunk in event["prefill"]:
            executed += chunk["tokens"] + chunk.get("cached", 0)
            if chunk["id"] not in seen:
                seen.add(chunk["id"])
                new += inputs[chunk["id"]] - chunk.get("cached", 0)
    return Ratio(executed, new, "prefill tokens executed / new prompt tokens")  # noqa: F821
