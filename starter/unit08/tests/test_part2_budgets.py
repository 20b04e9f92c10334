"""Part 2: budgeted() and paged() in policies.py (chapter 31.3 and 31.6).

kv-pages is the chapter's page example on a 64-page pool; lifo-victim shows what paged's
last-in-first-out victim costs on the same pool; burst-pool-256 is the burst trace on a device
with 16 slots and 256 pages, where reservation and dynamic growth part ways.
"""

from adapters import cache_after_steps, check_timeline, device, pages, run_policy, running_at


def test_part2_budgeted_kv_pages_reserves_the_declared_maximum():
    run = run_policy("kv-pages", "budgeted", "kv-64-pages", budget=512)
    check_timeline("kv-pages", "budgeted", run)
    after = cache_after_steps(run)
    dev = device("kv-64-pages")
    assert pages(after[1]) == 33, "X and Y hold 257 + 255 tokens: 17 + 16 pages"
    assert pages(after[1]) + dev.pages_for(256 + 768) == 97, "Z declares 1,024 positions"
    req = {r["id"]: r for r in run["requests"]}
    assert req["W"]["status"] == "rejected", "W can never fit in 64 pages"


def test_part2_paged_kv_pages_33_33_49_then_34():
    run = run_policy("kv-pages", "paged", "kv-64-pages", budget=512)
    check_timeline("kv-pages", "paged", run)
    after = cache_after_steps(run)
    xy = [{k: v for k, v in step.items() if k in "XY"} for step in after]
    assert [pages(xy[1]), pages(xy[2]), pages(after[2]), pages(xy[3])] == [33, 33, 49, 34]


def test_part2_paged_lifo_victim_is_the_long_partial_prefill():
    run = run_policy("lifo-victim", "paged", "kv-64-pages", budget=64)
    check_timeline("lifo-victim", "paged", run)
    victims = [rid for event in run["events"] for rid in event["preempt"]]
    assert victims == ["L"], "L, admitted last, is the one victim (it asks for the pages itself)"
    req = {r["id"]: r for r in run["requests"]}
    assert req["L"]["recomputedTokens"] == 442, "L had 442 of its 500 prompt tokens in its cache"


def test_part2_budgeted_lifo_victim_timeline():
    check_timeline(
        "lifo-victim", "budgeted", run_policy("lifo-victim", "budgeted", "kv-64-pages", budget=64)
    )


def test_part2_budgeted_burst_timeline():
    check_timeline("burst-pool-256", "budgeted", run_policy("burst", "budgeted", "pool-256"))


def test_part2_paged_burst_timeline():
    check_timeline("burst-pool-256", "paged", run_policy("burst", "paged", "pool-256"))


def test_part2_budgeted_rules_on_azure_slice():
    """Every step decodes every running request, stays within B and K, and never overtakes."""
    run = run_policy("azure-conv-slice", "budgeted", budget=256)
    started = []
    for event in run["events"]:
        running = running_at(run, event["startMs"])
        assert running == set(event["decode"]), f"step {event['index']}: decode every runner"
        new = len(event["decode"]) + sum(c["tokens"] for c in event["prefill"])
        assert new <= 256, f"step {event['index']}: {new} new positions > B = 256"
        started += [c["id"] for c in event["prefill"] if c["fromToken"] == 0]
    arrival = {r["id"]: (r["arrivalMs"], i) for i, r in enumerate(run["requests"])}
    assert started == sorted(started, key=arrival.get), "prefills start in arrival order"


def test_part2_paged_keeps_k_and_m_on_unseen():
    run = run_policy("unseen", "paged", "pool-256", budget=512)
    dev = device("pool-256")
    for index, cache in enumerate(cache_after_steps(run)):
        assert len(cache) <= dev.max_active, f"step {index}: more than K sequences hold KV"
        assert pages(cache) <= dev.kv_pages, f"step {index}: {pages(cache)} pages > M"
    for req in run["requests"]:
        times = req["tokenTimesMs"]
        assert all(a < b for a, b in zip(times, times[1:])), f"{req['id']}: a token twice"
        if req["status"] == "completed":
            assert len(times) == req["outputTokens"], f"{req['id']}: {len(times)} tokens"


def test_part2_budgeted_m_check_at_the_boundary():
    """kv-64-pages (64 pages of 16 tokens): A holds a 32-page reservation when B and C arrive.
    B's 32 pages fill the pool to its last page: B fits, and starts beside A. C's 33 pages fit
    beside neither A nor B: C waits until both are done."""

    def req(rid, arrival, prompt, max_out):
        return {
            "id": rid,
            "arrivalMs": arrival,
            "inputTokens": prompt,
            "outputTokens": 4,
            "maxOutputTokens": max_out,
        }

    trace = [req("A", 0, 256, 256), req("B", 1, 256, 256), req("C", 1, 256, 272)]
    run = run_policy(trace, "budgeted", "kv-64-pages", budget=512)
    first = {r["id"]: r["tokenTimesMs"][0] for r in run["requests"]}
    starts = {
        c["id"]: e["index"] for e in run["events"] for c in e["prefill"] if c["fromToken"] == 0
    }
    assert starts["B"] == starts["A"] + 1, (
        "B's 32 pages fit exactly beside A's 32 in M = 64: B starts in the next step"
    )
    end = {r["id"]: r["statusMs"] for r in run["requests"]}
    assert first["C"] > max(end["A"], end["B"]), "C (33 pages) fits beside neither A nor B"
