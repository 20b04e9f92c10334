"""Part 6 (optional): timed() in policies.py, steps filled by estimated time (31.3).

long-context (devices/long-context.json) is the lab device with the context terms of 31.3: a
prefill chunk of q tokens after s cached ones costs per attention pair (q*s + q*(q+1)/2), a
decoded sequence per cached position it reads. The same tokens cost more at a longer context,
so a token budget B no longer fixes a step's time; timed() fills each step by view.step_ms.
"""

from adapters import check_timeline, device, run_policy

TARGET, SHARE = 75, 32


def steps_with_cache(run: dict):
    """Each event with every holder's cached positions when it starts (no preemption here)."""
    ends = {r["id"]: r["statusMs"] for r in run["requests"] if r["status"] != "rejected"}
    cache: dict[str, int] = {}
    for event in run["events"]:
        yield event, dict(cache)
        for chunk in event["prefill"]:
            cache[chunk["id"]] = cache.get(chunk["id"], 0) + chunk["tokens"]
        for rid in event["decode"]:
            cache[rid] += 1
        for rid in [rid for rid in cache if ends[rid] <= event["endMs"]]:
            del cache[rid]


def estimate_ms(dev, event: dict, cache: dict[str, int], more: int = 0) -> float:
    """The step's time, written out from the device's formula; ``more`` tokens added to its
    last prefill chunk."""
    tokens = [c["tokens"] for c in event["prefill"]]
    if more:
        tokens[-1] += more
    pairs = sum(
        q * cache.get(c["id"], 0) + q * (q + 1) // 2 for c, q in zip(event["prefill"], tokens)
    )
    ms = dev.overhead_ms + dev.prefill_ms_per_token * sum(tokens)
    ms += dev.prefill_ms_per_context_token * pairs
    if event["decode"]:
        ms += dev.decode_batch_ms + dev.decode_ms_per_seq * len(event["decode"])
        ms += dev.decode_ms_per_context_token * sum(cache[rid] for rid in event["decode"])
    return ms


def test_part6_timed_burst_timeline():
    check_timeline("burst-long-context", "timed", run_policy("burst", "timed", "long-context"))


def test_part6_timed_fills_each_step_to_the_target_on_azure_slice():
    run = run_policy("azure-conv-slice", "timed", "long-context", target=TARGET, share=SHARE)
    dev = device("long-context")
    prompts = {r["id"]: r["inputTokens"] for r in run["requests"]}
    for event, cache in steps_with_cache(run):
        took = event["endMs"] - event["startMs"]
        assert abs(took - estimate_ms(dev, event, cache)) < 1e-6, "the device's formula"
        if not event["prefill"]:
            continue
        prefill = sum(c["tokens"] for c in event["prefill"])
        step = f"step {event['index']} ({prefill} prefill tokens, {took:.2f} ms)"
        assert took <= TARGET or prefill <= SHARE, f"{step}: past the target beyond the share"
        last = event["prefill"][-1]
        left = prompts[last["id"]] - cache.get(last["id"], 0) - last["tokens"]
        if left > 0 and prefill >= SHARE:
            assert estimate_ms(dev, event, cache, more=1) > TARGET, (
                f"{step}: one more token of {last['id']} still fits the target"
            )


def test_part6_timed_keeps_the_prefill_share_when_no_step_fits_the_target():
    """A target below every step's time: only the minimum prefill share moves prompts along, so
    a step that leaves a prompt unfinished holds at least SHARE prefill tokens."""
    run = run_policy("burst", "timed", "long-context", target=1, share=SHARE)
    prompts = {r["id"]: r["inputTokens"] for r in run["requests"]}
    done: dict[str, int] = {}
    for event in run["events"]:
        for chunk in event["prefill"]:
            done[chunk["id"]] = done.get(chunk["id"], 0) + chunk["tokens"]
        if event["prefill"]:
            last = event["prefill"][-1]["id"]
            tokens = sum(c["tokens"] for c in event["prefill"])
            step = f"step {event['index']} ({tokens} prefill tokens)"
            assert done[last] >= prompts[last] or tokens >= SHARE, f"{step}: below the share"
