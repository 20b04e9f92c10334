"""Recompute preemption on the real transformer (tiny model, CPU): a preempted request drops its
pages, prefills its prompt and the tokens it emitted again, and then continues with exactly the
tokens it would have produced without the preemption."""

from __future__ import annotations

import pytest

PROMPT, OUTPUT = 11, 9


def _executor(torch_cpu, pages=64, page_tokens=2):
    from realdevice.config import MODELS
    from realdevice.executor import Executor
    from realdevice.kv_cache import PagedKVCache
    from realdevice.model import Transformer

    config = MODELS["tiny"]
    model = _executor.models.setdefault(config, Transformer.build(config))
    return Executor(model, PagedKVCache(config, pages, page_tokens), "cpu")


_executor.models = {}


def _run(executor, batches):
    for batch in batches:
        executor.run(batch)


def _straight(rid="A"):
    from servesim import Batch, PrefillChunk

    return [Batch(prefill=[PrefillChunk(rid, PROMPT)])] + [Batch(decode=[rid])] * (OUTPUT - 1)


@pytest.mark.parametrize(("emitted", "chunks"), [(1, [12]), (3, [5, 5, 4]), (8, [1] * 19)])
def test_recomputed_sequence_continues_with_the_same_tokens(torch_cpu, emitted, chunks):
    from servesim import Batch, PrefillChunk

    plain = _executor(torch_cpu)
    plain.add_request("A", PROMPT, OUTPUT)
    _run(plain, _straight())
    expected = plain.generated("A")

    executor = _executor(torch_cpu)
    executor.add_request("A", PROMPT, OUTPUT)
    _run(executor, _straight()[:emitted])
    assert executor.cache.pool.used > 0
    assert sum(chunks) == PROMPT + emitted  # the recompute target: prompt + emitted tokens
    first, *rest = chunks
    executor.run(Batch(prefill=[PrefillChunk("A", first)], preempt=["A"]))
    for n in rest:
        executor.run(Batch(prefill=[PrefillChunk("A", n)]))
    assert len(executor.generated("A")) == emitted + 1  # the finishing chunk emits the next one
    _run(executor, [Batch(decode=["A"])] * (OUTPUT - emitted - 1))
    assert executor.generated("A") == expected
    assert executor.cache.pool.used == 0  # finished: every page back in the pool


def test_preemption_frees_the_pages_another_request_reuses(torch_cpu):
    """A tight pool: B can only be prefilled because A's pages came back when it was preempted."""
    from realdevice.kv_cache import KVCacheFullError
    from servesim import Batch, PrefillChunk

    def fresh():
        # A alone ends with 11 + 8 positions: 10 pages, the whole pool
        executor = _executor(torch_cpu, pages=10, page_tokens=2)
        executor.add_request("A", PROMPT, OUTPUT)
        executor.add_request("B", PROMPT, 2)
        _run(executor, _straight("A")[:3])  # A holds 11 + 2 positions: 7 pages
        return executor

    with pytest.raises(KVCacheFullError):  # without preemption B's 6 pages do not fit
        fresh().run(Batch(prefill=[PrefillChunk("B", PROMPT)]))
    executor = fresh()
    executor.run(Batch(prefill=[PrefillChunk("B", PROMPT)], preempt=["A"]))
    executor.run(Batch(decode=["B"]))  # B finishes, its pages return
    executor.run(Batch(prefill=[PrefillChunk("A", PROMPT + 3)]))
    _run(executor, [Batch(decode=["A"])] * (OUTPUT - 4))
    plain = _executor(torch_cpu)
    plain.add_request("A", PROMPT, OUTPUT)
    _run(plain, _straight())
    assert executor.generated("A") == plain.generated("A")


def test_runner_replays_a_preempting_schedule(torch_cpu, unit):
    """The replay runner on a schedule with mixed steps, a page pool and a preemption: every
    request gets the same token ids as a run of the same trace with no preemption at all."""
    from realdevice.backend import RealDevice
    from realdevice.runner import PolicyRun, run_replay
    from servesim import Batch, DeviceProfile, PrefillChunk, parse_trace

    trace = parse_trace(
        {
            "requests": [
                {"id": "A", "arrivalMs": 0, "inputTokens": 9, "outputTokens": 6},
                {"id": "B", "arrivalMs": 0, "inputTokens": 7, "outputTokens": 4},
            ]
        }
    )

    def preempting(view):
        # prefill A whole, decode it twice, then preempt A while B prefills; then mixed steps
        memo = view.memo
        memo["step"] = step = memo.get("step", 0) + 1
        running = [s.id for s in view.running]
        if step == 4:
            return Batch(prefill=[PrefillChunk("B", 7)], preempt=["A"])
        chunks = []
        for seq in view.waiting:
            if step != 1 and seq.id == "B" and step < 4:
                continue
            chunks.append(PrefillChunk(seq.id, seq.remaining_prefill))
            break
        return Batch(decode=running, prefill=chunks)

    def no_preemption(view):
        running = [s.id for s in view.running]
        chunks = [PrefillChunk(s.id, s.remaining_prefill) for s in list(view.waiting)[:1]]
        return Batch(decode=running, prefill=chunks)

    profile = DeviceProfile(kv_pages=12, page_tokens=2)
    runs = {}
    for name, policy in (("preempting", preempting), ("plain", no_preemption)):
        real = RealDevice("tiny", device="cpu", page_tokens=2, kv_pages=12, warmup=False)
        run, _ = run_replay(
            trace, PolicyRun(name, {}, policy, run_options={"extended": True}), profile, real
        )
        runs[name] = (run, {rid: real.executor.generated(rid) for rid in ("A", "B")})
    run, tokens = runs["preempting"]
    assert any(e["preempt"] == ["A"] for e in run["events"])
    assert [r["recomputes"] for r in run["requests"]] == [1, 0]
    assert any(e["decode"] and e["prefill"] for e in run["events"])  # a mixed step ran
    assert tokens == runs["plain"][1]
    assert all(len(t) == n for t, n in zip(tokens.values(), (6, 4), strict=True))


def test_run_gpu_passes_the_budget_and_queue_cap_in_extended_labs(torch_cpu):
    from argparse import Namespace
    from pathlib import Path
    from types import SimpleNamespace

    from realdevice.runsetup import policy_runs
    from servesim import DeviceProfile
    from servesim.labconfig import LabConfig, PolicySpec

    spec = PolicySpec("budgeted", "budgeted", {"budget": {"default": 8, "min": 1}})
    module = SimpleNamespace(budgeted=lambda view, budget: None)
    args = Namespace(budget=6, policy="budgeted")
    for extended in (False, True):
        lab = LabConfig("u", "U", DeviceProfile(), (spec,), (), Path("."), extended)
        (run,) = policy_runs(lab, module, args, {"budget": 6, "queue_cap": 3})
        assert run.params == {"budget": 6}
        if extended:
            assert run.simulate_options == {
                "budget": 6,
                "queue_cap": 3,
                "admit": None,
                "closed": None,
            }
            assert run.run_options == {
                "extended": True,
                "limits": {"budget": 6, "queueCap": 3},
            }
        else:
            assert run.simulate_options == {} and run.run_options == {}


def test_cuda_recompute_continues_with_the_same_tokens(torch_cpu):
    """GPU counterpart of the recompute test above (float32 on CUDA, 3 tokens emitted)."""
    if not torch_cpu.cuda.is_available():
        pytest.skip("needs a CUDA GPU (torch.cuda.is_available() is False)")
    from realdevice.backend import RealDevice
    from servesim import Batch, PrefillChunk

    def tokens(preempt_after):
        real = RealDevice("tiny", device="cuda", dtype="float32", page_tokens=2, kv_pages=64)
        real.executor.add_request("A", PROMPT, OUTPUT)
        steps = _straight()
        _run(real.executor, steps[:preempt_after])
        if preempt_after < len(steps):
            target = PROMPT + preempt_after
            real.executor.run(Batch(prefill=[PrefillChunk("A", target)], preempt=["A"]))
            _run(real.executor, [Batch(decode=["A"])] * (OUTPUT - preempt_after - 1))
        return real.executor.generated("A")

    assert tokens(3) == tokens(len(_straight()))
