"""Part 3: prefix_admit() in policies.py: admission counts only the pages a start takes."""

from adapters import check_timeline, device, pages_in_use, run_policy, started_chunks


def test_part3_prefix_admit_shared_prefix_timeline():
    check_timeline("shared-prefix", "prefix_admit", run_policy("shared-prefix", "prefix_admit"))


def test_part3_prefix_admit_evict_timeline():
    run = run_policy("evict", "prefix_admit", device("pool-24"))
    check_timeline("evict-pool-24", "prefix_admit", run)
    assert max(pages_in_use(run)) <= 24, "more pages in use than the pool holds"


def long_prefix() -> list[dict]:
    """A decodes on a 16-page pool with a 160-token prompt (10 pages, 9 full pages of the shared
    prefix); B, with the same 150-token prefix, arrives while A runs."""
    return [
        {"id": rid, "arrivalMs": at, "inputTokens": 160, "outputTokens": out,
         "prefix": [{"id": "sys", "tokens": 150}]}
        for rid, at, out in (("A", 0.0, 40), ("B", 30.0, 4))
    ]  # fmt: skip


def test_part3_a_shared_prefix_lets_a_request_in_that_paged_keeps_out():
    """B needs 10 pages for its whole prompt, but only 6 are free while A runs. 9 of B's pages
    are A's, held already: B takes 1 new page and starts at once; prefix_paged waits for A."""
    dev = device(kvPages=16)
    admit = started_chunks(run_policy(long_prefix(), "prefix_admit", dev))["B"][0]
    assert admit.get("cached", 0) == 144
    paged = started_chunks(run_policy(long_prefix(), "prefix_paged", dev))["B"][0]
    assert admit["step"] < paged["step"], "prefix_admit starts B while A still runs"


def test_part3_never_admits_past_the_pool():
    for trace in ("shared-prefix", "evict"):
        dev = device("pool-24")
        run = run_policy(trace, "prefix_admit", dev)
        assert max(pages_in_use(run)) <= 24, f"{trace}: more pages in use than the pool holds"
