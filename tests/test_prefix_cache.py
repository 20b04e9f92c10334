"""Shared-prefix pages (unit 09, ``servesim.prefixcache``): keys, hits, reference counts,
generations and the free queue as vLLM V1 (0.33.0) keeps them with prefix caching on (the
probe figures of its rules, as the peer notes record them), the engine's use of the pool, the
replay's check of prefix hits and its refusal of forged ones, and a property test."""

from __future__ import annotations

import copy
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from servesim import Batch, DeviceProfile, PolicyError, PrefillChunk, parse_trace, simulate
from servesim.prefixcache import BlockPool, Grow, PoolError, Start, page_key
from servesim.runfile import build_run, uses_lifecycle

from grader import fastpath
from grader.units import load_unit
from grader.verify import replay_run
from grader.verify.problems import ProblemKind

P = 16


def start(pool: BlockPool, rid: str, tokens: int, *, claim: bool = True) -> int:
    """``rid`` starts with ``tokens`` positions, claiming its whole hit; returns the hit."""
    hit = pool.hit_tokens(rid, tokens) if claim else 0
    pool.apply_step([], [], [Start(rid, hit, tokens - hit, tokens)])
    return hit


# -- keys -----------------------------------------------------------------------------------------


def test_pages_share_keys_exactly_while_the_segments_agree():
    a = (("sys", 32), ("doc", 40))
    b = (("sys", 32), ("doc", 16), ("q", 30))
    assert page_key("a", a, 0, P) == page_key("b", b, 0, P)  # sys[0:16]
    assert page_key("a", a, 2, P) == page_key("b", b, 2, P)  # sys + doc[0:16]
    assert page_key("a", a, 3, P) != page_key("b", b, 3, P)  # doc[16:32] against q[0:16]
    assert page_key("a", a, 4, P) == ("own", "a", 4)  # 72 prefix tokens: page 4 is a's own
    assert page_key("a", (("x", 16), ("x", 16)), 1, P) != page_key("b", (("x", 32),), 1, P)


# -- hits (prefix-caching.md rules 3-5, with the probe figures) -----------------------------------


@pytest.mark.parametrize(
    ("prompt", "shared", "hit"), [(64, 64, 48), (65, 64, 64), (17, 17, 16), (80, 40, 32)]
)
def test_hit_is_capped_at_num_tokens_minus_one_then_whole_pages(prompt, shared, hit):
    prefixes = {r: (("g", shared),) for r in ("first", "second")}
    pool = BlockPool(P, None, prefixes)
    start(pool, "first", prompt)
    assert pool.hit_tokens("second", prompt) == hit


def test_a_later_start_in_the_same_step_hits_pages_an_earlier_one_fills():
    pool = BlockPool(P, None, {"a": (("g", 64),), "b": (("g", 64),)})
    hit_b = []
    pool.apply_step([], [], [Start("a", 0, 64, 64)])
    hit_b.append(pool.hit_tokens("b", 64))
    assert hit_b == [48]  # as vLLM: two identical 64-token prompts admitted together: 0 and 48
    pool.apply_step([], [], [Start("b", 48, 16, 64)])
    assert pool.in_use == 4 + 1  # three pages shared, b computes its last page again


# -- references, generations, free queue (rules 7-9) ----------------------------------------------


def test_a_shared_page_is_freed_only_when_its_last_holder_releases_it():
    pool = BlockPool(P, 8, {"a": (("g", 48),), "b": (("g", 48),)})
    start(pool, "a", 50)
    assert start(pool, "b", 50) == 48
    assert pool.in_use == 4 + 1 and pool.page[1].refs == 2
    assert pool.release("a") == 4
    assert pool.in_use == 4 and pool.page[1].refs == 1  # b still holds the shared pages
    assert pool.release("a") == 0  # a second release frees nothing
    assert pool.release("b") == 4 and pool.in_use == 0


def test_a_stale_release_cannot_free_a_reused_page():
    pool = BlockPool(P, 1, {})
    start(pool, "a", 10)
    (entry,) = pool.tables["a"]
    pool.release("a")
    start(pool, "b", 10)  # the one page, taken again: a new generation
    with pytest.raises(PoolError) as info:
        pool.unref("a", *entry)
    assert info.value.limit == "stale page event"
    assert pool.page[entry[0]].refs == 1 and pool.in_use == 1


def test_free_queue_order_unkeyed_first_then_never_used_then_least_recent_keyed_last_page_first():
    pool = BlockPool(P, 6, {"a": (("g", 64),), "c": (("g", 64),)})
    start(pool, "a", 70)  # pages 1-4 keyed, page 5 partly filled (no key)
    pool.release("a")  # 5 to the head; 4, 3, 2, 1 to the tail in that order
    assert pool.head == [5] and list(pool.tail) == [4, 3, 2, 1]
    start(pool, "b", 40)  # 3 pages: 5 (head), 6 (never used), then 4: the chain's end evicted
    assert [n for n, _ in pool.tables["b"]] == [5, 6, 4]
    assert pool.hit_tokens("c", 65) == 48  # the first three pages are still found


def test_a_preempted_sequence_keeps_its_pages_cached_and_finds_them_again():
    pool = BlockPool(P, 10, {})
    start(pool, "a", 40)
    pool.apply_step([Grow("a", 40, 1)], [], [])
    pool.apply_step([], ["a"], [])  # preempted: its pages freed, keys kept
    assert pool.in_use == 0
    assert pool.hit_tokens("a", 41) == 32  # prompt + emitted, capped and whole pages


def test_victims_are_released_only_when_a_holder_needs_their_pages():
    pool = BlockPool(P, 3, {})
    start(pool, "a", 16)
    start(pool, "b", 16)
    start(pool, "c", 1)
    assert pool.free == 0
    pool.apply_step([Grow("a", 16, 1)], ["c", "b"], [])  # c is enough for a's new page
    assert set(pool.tables) == {"a"} and pool.in_use == 3 - 1  # b released after the walk


# -- the engine and the replay --------------------------------------------------------------------


def shared_trace(n=3, prompt=70, shared=50, output=4, gap=5):
    reqs = [
        {
            "id": f"r{i}",
            "arrivalMs": i * gap,
            "inputTokens": prompt,
            "outputTokens": output,
            "prefix": [{"id": "sys", "tokens": shared}],
        }
        for i in range(n)
    ]
    return parse_trace({"name": "shared", "requests": reqs})


def claiming(seed: int | None = None):
    """Decode every running sequence, then start waiting ones in order with their whole hit,
    while the step fits (``seed``: random chunk sizes and claims up to the hit)."""
    rng = random.Random(seed)

    def policy(view):
        holders, victims = list(view.holders), []
        batch = Batch(decode=[s.id for s in view.running])
        while not view.fits(batch) and holders:  # preempt the newest holders, as paged does
            victims.append(holders.pop().id)
            kept = [rid for rid in batch.decode if rid not in victims]
            batch = Batch(decode=kept, preempt=victims)
        for seq in view.waiting:
            if seq.id in victims:
                continue
            hit = view.prefix_hit(seq, after=batch)
            if seed is not None and seq.prefilled == 0:
                hit = rng.choice(range(0, hit + 1, view.device.page_tokens))
            new = max(1, seq.remaining_prefill - hit)
            if seed is not None:
                new = rng.randint(1, new)
            chunk = PrefillChunk(seq.id, new, hit)
            more = Batch(batch.decode, (*batch.prefill, chunk), batch.preempt)
            if not view.fits(more):
                break
            batch = more
        if batch.decode or batch.prefill:
            return batch
        # nothing fits: the oldest holder goes on alone (a request that fits alone was admitted)
        keep = view.holders[0] if view.holders else view.waiting[0]
        others = [s.id for s in view.holders if s is not keep]
        if keep in view.running:
            return Batch(decode=[keep.id], preempt=others)
        return Batch(prefill=[PrefillChunk(keep.id, 1)], preempt=others)

    return policy


def test_a_prefix_hit_skips_its_prefill_work():
    trace = shared_trace(n=2, gap=0)
    device = DeviceProfile(prefix_caching=True, overhead_ms=0)
    timeline = simulate(trace, claiming(), device)
    (first,) = timeline.events[:1]
    assert [(c.id, c.tokens, c.cached) for c in first.batch.prefill] == [
        ("r0", 70, 0),
        ("r1", 70 - 48, 48),
    ]
    assert first.end_ms == 70 + 22  # only computed tokens cost device time
    assert [s.prefix_hit_tokens for s in timeline.sequences] == [0, 48]


def test_a_claim_beyond_the_cache_or_without_a_prefix_cache_stops_the_policy():
    def greedy(view):  # r1 claims one page more than r0 leaves it
        return Batch(prefill=[PrefillChunk("r0", 70), PrefillChunk("r1", 6, 64)])

    with pytest.raises(PolicyError, match="claims 64 cached positions, the cache holds 48"):
        simulate(shared_trace(n=2, gap=0), greedy, DeviceProfile(prefix_caching=True))

    def honest(view):  # the claim the cache would grant, on a device without one
        return Batch(prefill=[PrefillChunk("r0", 70), PrefillChunk("r1", 22, 48)])

    with pytest.raises(PolicyError, match="need a device with prefixCaching"):
        simulate(shared_trace(n=2, gap=0), honest, DeviceProfile())


def replay_bad(run, trace, device):
    problems, _ = replay_run(run, trace, device.to_json())
    return {p.statistic for p in problems if p.kind is ProblemKind.INVALID_SCHEDULE}


def test_replay_accepts_hits_and_refuses_a_hit_larger_than_what_is_cached():
    trace, device = shared_trace(n=3, gap=0), DeviceProfile(prefix_caching=True, kv_pages=20)
    timeline = simulate(trace, claiming(), device)
    run = build_run("c", {}, device, timeline, None, extended=True, limits={"budget": None})
    assert replay_bad(run, trace, device) == set()
    forged = copy.deepcopy(run)
    chunk = next(c for e in forged["events"] for c in e["prefill"] if c.get("cached"))
    chunk["cached"] += P
    chunk["fromToken"] += P
    chunk["tokens"] -= P
    assert "prefix hit" in replay_bad(forged, trace, device)
    plain = DeviceProfile(kv_pages=20)
    assert "prefix hit" in replay_bad({**run, "device": plain.to_json()}, trace, plain)


def test_fast_path_and_compact_format_leave_prefix_caching_to_the_lab_engine():
    unit, device = load_unit("unit08"), DeviceProfile(kv_pages=64, prefix_caching=True)
    plain = parse_trace(
        {"requests": [{"id": "a", "arrivalMs": 0, "inputTokens": 8, "outputTokens": 2}]}
    )
    assert not fastpath.covers(unit, "paged", plain, device)
    assert not fastpath.covers(unit, "paged", shared_trace(), DeviceProfile(kv_pages=64))
    assert fastpath.covers(unit, "paged", plain, DeviceProfile(kv_pages=64))
    timeline = simulate(plain, claiming(), device)
    assert uses_lifecycle(build_run("c", {}, device, timeline, None, extended=True))
    assert DeviceProfile().to_json() == DeviceProfile(prefix_caching=False).to_json()
    assert "prefixCaching" not in DeviceProfile().to_json()


rows = st.lists(
    st.tuples(
        st.integers(0, 30).map(lambda q: q / 2),
        st.integers(1, 60),  # inputTokens
        st.integers(1, 6),  # outputTokens
        st.sampled_from(["a", "b"]),  # prefix group
        st.integers(0, 60),  # prefix tokens (capped at the prompt)
        st.one_of(st.none(), st.integers(1, 60)),  # cancelMs
    ),
    min_size=1,
    max_size=8,
)


def random_trace(rows):
    """The trace that ``rows`` (drawn by the strategy above) describe."""
    reqs = []
    for i, (arrival, n_in, n_out, group, shared, cancel) in enumerate(rows):
        req = {"id": f"R{i}", "arrivalMs": arrival, "inputTokens": n_in, "outputTokens": n_out}
        if min(shared, n_in):
            req["prefix"] = [{"id": group, "tokens": min(shared, n_in)}]
        if cancel is not None:
            req["cancelMs"] = cancel
        reqs.append(req)
    return parse_trace({"name": "random", "requests": reqs})


@settings(max_examples=100, deadline=None)
@given(rows=rows, pages=st.one_of(st.none(), st.integers(8, 20)), seed=st.integers(0, 10**6))
def test_random_prefix_runs_keep_the_pool_consistent_and_replay_clean(rows, pages, seed):
    trace = random_trace(rows)
    device = DeviceProfile(kv_pages=pages, page_tokens=4, prefix_caching=True)
    inner = claiming(seed=seed)

    def checked(view):
        pool = view.pool
        holding = {}
        for table in pool.tables.values():
            for number, generation in table:
                assert pool.page[number].generation == generation
                holding[number] = holding.get(number, 0) + 1
        assert {n: p.refs for n, p in pool.page.items() if p.refs} == holding
        assert pool.in_use == len(holding) == view.pages_held
        assert pages is None or pool.in_use <= pages
        assert set(pool.tables) == {s.id for s in view.holders}
        return inner(view)

    timeline = simulate(trace, checked, device)
    run = build_run("c", {}, device, timeline, None, extended=True, limits={"budget": None})
    problems, replay = replay_run(run, trace, device.to_json())
    assert problems == []
    assert replay.token_times == {s.id: s.token_times_ms for s in timeline.sequences}


def _shared_run():
    trace, device = shared_trace(n=3, gap=0), DeviceProfile(prefix_caching=True, kv_pages=20)
    timeline = simulate(trace, claiming(), device)
    run = build_run("c", {}, device, timeline, None, extended=True, limits={"budget": None})
    return trace, device, run


def test_run_file_lists_page_reference_changes_and_the_replay_checks_them():
    trace, device, run = _shared_run()
    ops = [op for e in run["events"] for op in e["pageOps"]]
    assert {op[0] for op in ops} == {"take", "hit", "release"}
    assert sum(op[0] == "release" for op in ops) == sum(op[0] != "release" for op in ops)
    twice = copy.deepcopy(run)
    ops_of = next(
        e["pageOps"] for e in twice["events"] if any(o[0] == "release" for o in e["pageOps"])
    )
    ops_of.append(next(o for o in ops_of if o[0] == "release"))
    assert "page released twice" in replay_bad(twice, trace, device)
    shared = copy.deepcopy(run)
    op = next(o for e in shared["events"] for o in e["pageOps"] if o[0] == "release" and o[4] > 0)
    op[4] = 0
    assert "shared page freed while referenced" in replay_bad(shared, trace, device)
    stale = copy.deepcopy(run)
    op = next(o for e in stale["events"] for o in e["pageOps"] if o[0] == "release")
    op[3] -= 1
    assert "stale page event" in replay_bad(stale, trace, device)
    missing = copy.deepcopy(run)
    del missing["events"][0]["pageOps"]
    assert "page events" in replay_bad(missing, trace, device)
    assert replay_bad(run, trace, device) == set()


def test_a_policy_that_changes_the_prefix_cache_is_stopped():
    def meddling(view):
        if view.running:
            view.pool.release(view.running[0].id)  # frees pages the engine thinks are held
        return claiming()(view)

    with pytest.raises(PolicyError, match=r"view\.pool"):
        simulate(shared_trace(n=2, gap=0), meddling, DeviceProfile(prefix_caching=True))


def test_an_edit_behind_the_pools_methods_shows_in_the_replay():
    trace, device = shared_trace(n=3, gap=0), DeviceProfile(prefix_caching=True, kv_pages=20)

    done = []

    def sneaky(view):
        if len(view.running) == 3 and not done:  # once: r0 will release its pages in another order
            view.pool.tables[view.running[0].id].reverse()
            done.append(True)
        return claiming()(view)

    timeline = simulate(trace, sneaky, device)
    run = build_run("c", {}, device, timeline, None, extended=True, limits={"budget": None})
    assert done and "page events" in replay_bad(run, trace, device)


# -- a dry run leaves the pool as it was ----------------------------------------------------------


def _pool_state(pool: BlockPool) -> tuple:
    """Everything a step may change, orders included (the free queue's, each key's pages')."""
    return (
        {n: (p.refs, p.key, p.generation) for n, p in pool.page.items()},
        {rid: list(table) for rid, table in pool.tables.items()},
        dict(pool.keyed),
        {key: list(pages) for key, pages in pool.cached.items()},
        list(pool.head),
        list(pool.tail),
        pool.fresh,
        pool.in_use,
    )


def _outcome(work, *args):
    """``work(*args)``, or the refusal it raised (the same refusal either way is compared)."""
    try:
        return work(*args)
    except Exception as exc:
        return (type(exc).__name__, str(exc))


def _copied_step(pool: BlockPool, grows, victims, starts) -> tuple:
    dry = pool.copy()
    dry.apply_step(grows, victims, starts)
    return _pool_state(dry)


@settings(max_examples=60, deadline=None)
@given(rows=rows, pages=st.one_of(st.none(), st.integers(8, 20)), seed=st.integers(0, 10**6))
def test_a_trial_step_reads_what_a_copy_would_and_leaves_the_pool_as_it_was(rows, pages, seed):
    """``BlockPool.trial`` (how the engine checks every step) against ``copy`` + ``apply_step``
    on random candidate steps at every decision of random runs: the same pool after the step
    (or the same refusal), and the pool itself unchanged, page log included."""
    trace = random_trace(rows)
    device = DeviceProfile(kv_pages=pages, page_tokens=4, prefix_caching=True)
    inner, rng, tried = claiming(seed=seed), random.Random(seed), []

    def candidate(view):
        pool, holders = view.pool, [s.id for s in view.holders]
        grows = [Grow(rid, s.context_tokens, rng.randint(1, 9)) for rid, s in (
            (s.id, s) for s in view.holders) if rng.random() < 0.7]  # fmt: skip
        victims = [rid for rid in holders if rng.random() < 0.3]
        starts = []
        for seq in view.waiting:
            if seq.holds_kv or rng.random() < 0.3:
                continue
            hit = pool.hit_tokens(seq.id, seq.prefill_target)
            hit = rng.choice(range(0, hit + 2 * P, P))  # sometimes more than the cache holds
            starts.append(Start(seq.id, hit, rng.randint(1, 12), seq.prefill_target))
        return grows, victims, starts

    def checked(view):
        pool = view.pool
        for _ in range(3):
            grows, victims, starts = candidate(view)
            before, log = _pool_state(pool), list(pool.log or [])
            expected = _outcome(_copied_step, pool, grows, victims, starts)
            got = _outcome(pool.trial, grows, victims, starts, _pool_state)
            assert got == expected
            assert _pool_state(pool) == before and list(pool.log or []) == log
            tried.append(got)
        return inner(view)

    timeline = simulate(trace, checked, device)
    assert tried or not timeline.events  # a policy is asked whenever a step runs
