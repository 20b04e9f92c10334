"""Unit 09 on the real transformer (tiny model, CPU): the real paged KV cache follows the
engine's prefix-cache page operations. A prefix hit shares the real pages and their KV data
(the hit request's logits equal those of a run without the hit) and skips that prefill; a
cancelled request's pages return once; a paused stream keeps its pages until it resumes."""

from __future__ import annotations

import pytest

from grader import reference
from grader.units import load_unit
from grader.verify import verify_run

U09 = load_unit("unit09")
BUDGET = 64
PAGE = 4


@pytest.fixture(scope="module")
def solution():
    return reference.solution_policies(U09)


def _trace(*rows):
    from servesim import parse_trace

    return parse_trace({"name": "u09-small", "requests": list(rows)})


def _row(rid, at, prompt, out, **extra):
    return {"id": rid, "arrivalMs": at, "inputTokens": prompt, "outputTokens": out, **extra}


def _prefix(tokens, segment="sys"):
    return [{"id": segment, "tokens": tokens}]


def _device(**changes):
    from servesim import DeviceProfile

    base = dict(
        prefill_ms_per_token=0.1,
        decode_batch_ms=2.0,
        overhead_ms=0.25,
        page_tokens=PAGE,
        kv_pages=32,
        prefix_caching=True,
    )
    return DeviceProfile(**(base | changes))


def plain(view):
    """Decode every running stream that is not paused; prefill the first waiting request
    whole, claiming the pages the prefix cache holds for it (when the device has one)."""
    from servesim import Batch, PrefillChunk, Wait

    decode = tuple(s.id for s in view.running if not s.paused)
    chunks = ()
    for seq in view.waiting:
        hit = 0
        if view.pool is not None and seq.prefilled == 0:
            hit = view.pool.hit_tokens(seq.id, seq.prefill_target)
        chunks = (PrefillChunk(seq.id, seq.remaining_prefill - hit, hit),)
        break
    if not decode and not chunks:
        return Wait(view.now_ms + 1.0)
    return Batch(decode=decode, prefill=chunks)


def _recording(real):
    """After every submission: each request's real pages, the real reference counts; the
    logits of every token; and how many positions the model was fed in all."""
    steps, logits, fed = [], {}, [0]
    run, forward = real.executor.run, real.model.forward

    def recorded(batch, context=None):
        new = run(batch, context)
        for rid in new:
            logits.setdefault(rid, []).append(real.executor.last_logits[rid].clone())
        steps.append(
            ({r: list(t.pages) for r, t in real.cache.tables.items()}, dict(real.cache.refs))
        )
        return new

    def counted(tokens, *args, **kwargs):
        fed[0] += tokens.shape[0]
        return forward(tokens, *args, **kwargs)

    real.executor.run = recorded
    real.model.forward = counted
    return steps, logits, fed


def _run(trace, policy, device, device_name="cpu", mode="replay"):
    from realdevice.backend import RealDevice
    from realdevice.runner import RUNNERS, PolicyRun

    real = RealDevice(
        "tiny",
        device=device_name,
        dtype="float32",
        page_tokens=device.page_tokens,
        kv_pages=device.kv_pages or 64,
        warmup=False,
    )
    steps, logits, fed = _recording(real)
    options = {"extended": True, "limits": {"budget": None, "queueCap": None}}
    spec = PolicyRun("p", {}, policy, {}, options)
    run, replayed = RUNNERS[mode](trace, spec, device, real)
    run["_verify"] = verify_run(run, replayed, run["device"], timing="measured")
    return run, real, steps, logits, fed[0]


def _shared_trace():
    return _trace(
        _row("A", 0, 14, 4, prefix=_prefix(12)),
        _row("B", 5, 13, 4, prefix=_prefix(12)),
        _row("C", 6, 10, 3, prefix=_prefix(8)),
        _row("D", 7, 9, 3),
    )


def _hit_check(torch, device_name, mode="replay"):
    shared = _shared_trace()
    run, real, steps, logits, fed = _run(shared, plain, _device(), device_name, mode)
    assert run["_verify"] == []
    hits = {c["id"]: c["cached"] for e in run["events"] for c in e["prefill"] if c.get("cached")}
    assert hits == {"B": 12, "C": 8}  # whole pages of the shared prefix, last token computed
    ops = [op for e in run["events"] for op in e["pageOps"]]
    hit_pages = {op[2] - 1 for op in ops if op[0] == "hit"}
    # a hit page is held once in the real cache, in two tables, with two references
    first_b = next(i for i, e in enumerate(run["events"]) if "B" in {c["id"] for c in e["prefill"]})
    tables, refs = steps[first_b]
    assert set(tables["B"][:3]) <= hit_pages
    # live: the measured clock decides whether A still runs when B arrives (on a fast machine
    # A is done by 5 ms and B hits A's freed pages, still keyed); replay mode, on the device
    # model's clock, always checks the shared holding
    if mode == "replay" or "A" in tables:
        assert tables["B"][:3] == tables["A"][:3] and set(tables["A"][:3]) <= hit_pages
        assert all(refs[p] >= 2 for p in tables["A"][:3])
    assert real.cache.pool.used == 0 and real.cache.refs == {}
    # the same requests without any prefix cache: every prompt position computed
    _, base_real, _, base_logits, base_fed = _run(
        shared, plain, _device(prefix_caching=False), device_name
    )
    assert base_real.cache.pool.used == 0
    assert fed == base_fed - sum(hits.values())  # the hit's prefill is skipped
    for rid in ("A", "B", "C", "D"):
        assert real.executor.generated(rid) == base_real.executor.generated(rid)
        for got, want in zip(logits[rid], base_logits[rid], strict=True):
            assert torch.allclose(got, want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("mode", ["replay", "live"])
def test_a_prefix_hit_shares_real_pages_and_gives_the_same_logits(torch_cpu, mode):
    _hit_check(torch_cpu, "cpu", mode)


def test_cuda_prefix_hit_shares_real_pages(torch_cpu):
    """GPU counterpart of the test above (float32 on CUDA)."""
    if not torch_cpu.cuda.is_available():
        pytest.skip("needs a CUDA GPU (torch.cuda.is_available() is False)")
    _hit_check(torch_cpu, "cuda")


@pytest.mark.parametrize("mode", ["replay", "live"])
@pytest.mark.parametrize("name", ["cancel_aware", "prefix_paged", "prefix_admit"])
def test_unit09_policies_run_with_cancels_shared_prefixes_and_a_tight_pool(
    solution, torch_cpu, name, mode
):
    """The reference policies on a pool that preempts, with client cancels: the real cache
    matched the engine's tables after every step (``pageops.check``, else the run raises),
    every engine release happened once in the real cache, every page came back. Live runs
    decide cancels on the measured clock and pass the grader's verification."""
    from realdevice.kv_cache import PagedKVCache

    trace = _trace(
        _row("A", 0, 14, 6, prefix=_prefix(12)),
        _row("B", 1, 13, 6, prefix=_prefix(12), cancelMs=3),
        _row("C", 2, 18, 5, prefix=_prefix(8)),
        _row("D", 3, 9, 8, cancelMs=9),
        _row("E", 4, 12, 4, prefix=_prefix(12)),
        _row("F", 40, 6, 2, cancelMs=0.5),
    )
    policy = getattr(solution, name)
    released = []
    unref = PagedKVCache.unref

    def counting(cache, rid, page):
        released.append((rid, page + 1))
        unref(cache, rid, page)

    PagedKVCache.unref = counting
    try:
        run, real, steps, _, _ = _run(
            trace, lambda view: policy(view, BUDGET), _device(kv_pages=10), mode=mode
        )
    finally:
        PagedKVCache.unref = unref
    engine = [(op[1], op[2]) for e in run["events"] for op in e["pageOps"] if op[0] == "release"]
    assert released == engine
    cancelled = {r["id"] for r in run["requests"] if r["status"] == "cancelled"}
    assert {"B", "D"} <= cancelled
    held = {rid for tables, _ in steps for rid in tables} & cancelled
    assert held or mode == "live"  # live: the measured clock decides whether B started
    for rid in held:
        assert any(who == rid for who, _ in released)
    assert any(op[0] == "hit" for e in run["events"] for op in e["pageOps"]) == (
        name != "cancel_aware"
    )
    # live: the measured clock decides whether the pool runs short while B and D still hold pages
    assert any(e["preempt"] for e in run["events"]) or mode == "live"
    assert [e["kvPagesHeld"] for e in run["events"]][-1] == 0
    assert real.cache.pool.used == 0 and real.cache.refs == {}
    if mode == "live":
        assert run["_verify"] == []


@pytest.mark.parametrize("mode", ["replay", "live"])
def test_paused_streams_keep_their_real_pages(torch_cpu, mode):
    """A slow reader's stream pauses with a full buffer: its real pages stay as they are
    until it resumes (and are released once when it finishes)."""
    trace = _trace(
        _row("S", 0, 10, 8, prefix=_prefix(8), readBytesPerS=2560),
        _row("Q", 0, 9, 12, prefix=_prefix(8)),
    )
    device = _device(stream_buffer_bytes=512, stream_event_bytes=256)
    run, real, steps, _, _ = _run(trace, plain, device, mode=mode)
    slow = next(r for r in run["requests"] if r["id"] == "S")
    assert slow["pausedMs"] and slow["status"] == "completed"
    virtual_ends = [e.get("virtualEndMs", e["endMs"]) for e in run["events"]]
    for start, end in slow["pausedMs"]:
        inside = [i for i, t in enumerate(virtual_ends) if start <= t and (end is None or t < end)]
        assert inside  # the other stream ran while S was paused
        held = [steps[i][0]["S"] for i in inside]
        assert held[0] and all(pages == held[0] for pages in held)
        assert all("S" not in run["events"][i]["decode"] for i in inside[1:])
    assert real.cache.pool.used == 0
    assert run["_verify"] == [] or mode == "replay"  # replay: the virtual run's pauses


@pytest.mark.parametrize("mode", ["replay", "live"])
def test_a_stalled_stream_gives_its_pages_back_once(torch_cpu, mode):
    """A client that stops reading: its stream pauses holding pages, stalls at the pause
    deadline and is cancelled; the real cache returns each of its pages once, as the engine."""
    from realdevice.kv_cache import PagedKVCache

    trace = _trace(
        _row("S", 0, 10, 8, prefix=_prefix(8), readBytesPerS=1),
        _row("Q", 0, 9, 6, prefix=_prefix(8)),
    )
    device = _device(stream_buffer_bytes=512, stream_event_bytes=256, stream_pause_deadline_ms=1)
    released, unref = [], PagedKVCache.unref

    def counting(cache, rid, page):
        released.append((rid, page + 1))
        unref(cache, rid, page)

    PagedKVCache.unref = counting
    try:
        run, real, steps, _, _ = _run(trace, plain, device, mode=mode)
    finally:
        PagedKVCache.unref = unref
    slow = next(r for r in run["requests"] if r["id"] == "S")
    assert slow["status"] == "cancelled" and slow["cancelReason"] == "stalled"
    assert any(tables.get("S") for tables, _ in steps)
    engine = [(op[1], op[2]) for e in run["events"] for op in e["pageOps"] if op[0] == "release"]
    assert released == engine and any(rid == "S" for rid, _ in released)
    assert real.cache.pool.used == 0
    assert run["_verify"] == [] or mode == "replay"


def test_split_cuts_after_the_steps_own_operations():
    from realdevice.pageops import split

    ops = [
        ["release", "V", 3, 1, 0],  # victim, preempted
        ["take", "G", 4, 1, 1],
        ["release", "W", 5, 1, 0],  # victim, restarted in the same step
        ["take", "W", 5, 2, 1],
        ["release", "W", 5, 2, 0],  # ... and finished: after the step
        ["release", "X", 6, 1, 0],  # cancelled before the next step
    ]
    before, after = split(ops, ("V", "W"))
    assert before == ops[:4] and after == ops[4:]
    assert split(ops[:1], ("V",)) == (ops[:1], [])
    assert split([["release", "X", 6, 1, 0]], ()) == ([], [["release", "X", 6, 1, 0]])


def test_a_release_twice_or_of_a_foreign_page_is_refused(torch_cpu):
    from realdevice.config import MODELS
    from realdevice.kv_cache import PagedKVCache, PageTableError

    cache = PagedKVCache(MODELS["tiny"], 4, PAGE)
    cache.driven = True
    cache.take("A", 2)
    cache.share("B", 2)
    assert cache.pool.used == 1 and cache.refs == {2: 2}
    cache.unref("A", 2)
    assert cache.pool.used == 1  # B still holds it
    with pytest.raises(PageTableError):
        cache.unref("A", 2)
    with pytest.raises(PageTableError):
        cache.unref("B", 1)
    cache.unref("B", 2)
    assert cache.pool.used == 0 and cache.refs == {}


def test_check_names_the_request_whose_real_pages_differ(torch_cpu):
    from realdevice.config import MODELS
    from realdevice.kv_cache import PagedKVCache, PageTableError
    from realdevice.pageops import apply, check

    cache = PagedKVCache(MODELS["tiny"], 4, PAGE)
    cache.driven = True
    apply(cache, [["take", "A", 1, 1, 1], ["take", "A", 2, 1, 1], ["hit", "B", 1, 1, 2]])
    check(cache, {"A": (1, 2), "B": (1,)}, 0)
    with pytest.raises(PageTableError, match="'B' holds pages"):
        check(cache, {"A": (1, 2), "B": (2,)}, 3)
    with pytest.raises(PageTableError, match="references"):  # the engine counts otherwise
        apply(cache, [["take", "C", 3, 1, 2]])


def test_without_prefix_caching_a_cancel_frees_its_pages_once(torch_cpu):
    """A device without a prefix cache: the real cache allocates itself; a request cancelled
    mid-decode or while the device idles gives back each of its pages once."""
    from realdevice.kv_cache import PagePool

    trace = _trace(
        _row("A", 0, 10, 12, cancelMs=6),  # cancelled after a few decodes
        _row("B", 0, 7, 3),
        _row("C", 30, 5, 40, cancelMs=1.1),  # cancelled at once, before its second decode
        _row("D", 60, 9, 2),
    )
    allocated, released = [], []
    allocate, release = PagePool.allocate, PagePool.release

    def taking(pool, pages):
        got = allocate(pool, pages)
        allocated.extend(got)
        return got

    def giving(pool, pages):
        released.extend(pages)
        release(pool, pages)

    PagePool.allocate, PagePool.release = taking, giving
    try:
        run, real, steps, _, _ = _run(trace, plain, _device(prefix_caching=False))
    finally:
        PagePool.allocate, PagePool.release = allocate, release
    status = {r["id"]: r for r in run["requests"]}
    assert status["A"]["status"] == status["C"]["status"] == "cancelled"
    assert 0 < len(status["A"]["tokenTimesMs"]) < 12 and status["C"]["tokenTimesMs"]
    assert sorted(allocated) == sorted(released) and real.cache.pool.used == 0
    assert status["A"]["statusMs"] >= status["A"]["tokenTimesMs"][-1]
    ended = [i for i, e in enumerate(run["events"]) if e["virtualEndMs"] >= 6]
    assert "A" not in steps[ended[-1]][0]  # gone from the real tables after its cancel
