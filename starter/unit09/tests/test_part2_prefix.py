"""Part 2: prefix_paged() in policies.py: every start claims its prefix hit.

shared-prefix: sixteen requests sharing two system prompts and a document; evict-pool-24: three
prefix groups on a 24-page pool, where freed prefix pages are evicted.
"""

from adapters import check_timeline, device, pages_in_use, run_policy, started_chunks


def pair(prompt: int, shared: int, gap: float) -> list[dict]:
    return [
        {"id": rid, "arrivalMs": at, "inputTokens": prompt, "outputTokens": 3,
         "prefix": [{"id": "sys", "tokens": shared}]}
        for rid, at in (("A", 0.0), ("B", gap))
    ]  # fmt: skip


def test_part2_prefix_paged_shared_prefix_timeline():
    check_timeline("shared-prefix", "prefix_paged", run_policy("shared-prefix", "prefix_paged"))


def test_part2_prefix_paged_evict_timeline():
    run = run_policy("evict", "prefix_paged", device("pool-24"))
    check_timeline("evict-pool-24", "prefix_paged", run)
    assert max(pages_in_use(run)) <= 24


def test_part2_a_hit_is_claimed_in_the_same_step():
    """A and B arrive together with 70-token prompts whose first 50 tokens are shared. A starts
    first and fills pages 0-3; B, in the same step, finds the three full pages of the shared
    prefix (48 positions) and computes only 22 tokens."""
    run = run_policy(pair(70, 50, 0.0), "prefix_paged")
    starts = started_chunks(run)
    assert starts["A"][0].get("cached", 0) == 0
    assert starts["B"][0].get("cached", 0) == 48, (
        "B's first chunk must claim the 48 cached positions"
    )
    assert starts["B"][0]["tokens"] == 22
    assert starts["A"][0]["step"] == starts["B"][0]["step"]


def test_part2_a_fully_cached_prompt_still_computes_its_last_page():
    """B arrives after A finished with the same 64-token prompt: the hit stops at 63 positions,
    rounded down to whole pages: 48."""
    run = run_policy(pair(64, 64, 500.0), "prefix_paged")
    b = started_chunks(run)["B"][0]
    assert (b.get("cached", 0), b["tokens"]) == (48, 16)


def test_part2_hits_cost_no_prefill_time():
    run = run_policy(pair(70, 50, 0.0), "prefix_paged")
    first = run["events"][0]
    dev = device()
    computed = sum(c["tokens"] for c in first["prefill"])
    want = dev.overhead_ms + dev.prefill_ms_per_token * computed
    assert abs(first["endMs"] - first["startMs"] - want) < 1e-9
