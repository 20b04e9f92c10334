"""Unit 08 on the real device (tiny model, CPU): the real KV cache is the virtual one.

On a trace that forces several preemptions (``paged``, a 12-page pool of 4-token pages), every
submission the runner executed is compared with the schedule the engine made: the same
requests and tokens, and after each step the same pages held by each request. A recomputed (or
swapped) request's logits at every token it emits equal those of a run where nobody is
preempted. Swaps move the pages to the host pool and back.
"""

from __future__ import annotations

import pytest

from grader import reference
from grader.units import load_unit
from grader.verify import verify_run

U08 = load_unit("unit08")
BUDGET = 64


@pytest.fixture(scope="module")
def paged():
    policies = reference.solution_policies(U08)
    return lambda view: policies.paged(view, BUDGET)


def _trace():
    from servesim import parse_trace

    rows = [
        {"id": f"R{i}", "arrivalMs": i * 0.5, "inputTokens": 8 + 3 * i, "outputTokens": 12}
        for i in range(5)
    ]
    return parse_trace({"name": "preempting", "requests": rows})


def _device(**changes):
    from servesim import DeviceProfile

    base = dict(prefill_ms_per_token=0.1, decode_batch_ms=2.0, overhead_ms=0.25, page_tokens=4)
    return DeviceProfile(**(base | {"kv_pages": 12} | changes))


def _virtual_pages(trace, events, device):
    """Pages each request holds after each event, by the device rules (releases applied)."""
    from servesim import rules
    from servesim.sequence import Sequence

    seqs = {r.id: Sequence.of(r, i) for i, r in enumerate(trace.requests)}
    away: set[str] = set()
    for ev in events:
        batch = ev.batch
        for rid in batch.preempt:
            seqs[rid].drop_cache()
        away = (away | set(batch.swap_out)) - set(batch.swap_in)
        for chunk in batch.prefill:
            seqs[chunk.id].take_prefill(chunk.tokens, ev.end_ms)
        for rid in batch.decode:
            seqs[rid].take_decode(ev.end_ms)
        yield {
            rid: rules.pages_for(device, s.context_tokens)
            for rid, s in seqs.items()
            if s.context_tokens and s.generated < s.output_tokens and rid not in away
        }


def _recording(real):
    """Record, after every submission, each request's pages (device and host) and the logits
    of every request that got a token."""
    steps, logits = [], {}
    run = real.executor.run

    def recorded(batch, context=None):
        new = run(batch, context)
        for rid in new:
            logits.setdefault(rid, []).append(real.executor.last_logits[rid].clone())
        host = real.executor.host
        steps.append(
            (
                {rid: len(t.pages) for rid, t in real.cache.tables.items()},
                {rid: len(t.pages) for rid, t in host.tables.items()} if host else {},
            )
        )
        return new

    real.executor.run = recorded
    return steps, logits


def _real_run(policy, device, mode, torch_cpu):
    from realdevice.backend import RealDevice
    from realdevice.runner import RUNNERS, PolicyRun

    pool = device.kv_pages or 256
    real = RealDevice(
        "tiny",
        device="cpu",
        page_tokens=device.page_tokens,
        kv_pages=pool,
        host_pages=device.host_pages,
        warmup=False,
    )
    steps, logits = _recording(real)
    spec = PolicyRun(
        "paged",
        {"budget": BUDGET},
        policy,
        {"budget": BUDGET},
        {"extended": True, "limits": {"budget": BUDGET, "queueCap": None}},
    )
    run, trace = RUNNERS[mode](_trace(), spec, device, real)
    return run, trace, real, steps, logits


def _uninterrupted_logits(paged, torch_cpu):
    device = _device(kv_pages=None)
    run, _, _, _, logits = _real_run(paged, device, "replay", torch_cpu)
    assert not any(e["preempt"] for e in run["events"])
    return logits


def _batches(run):
    return [
        (
            tuple(e["decode"]),
            tuple((c["id"], c["tokens"]) for c in e["prefill"]),
            tuple(e["preempt"]),
        )
        for e in run["events"]
    ]


@pytest.mark.parametrize("mode", ["replay", "live"])
def test_preempting_schedule_runs_on_exactly_the_virtual_pages(paged, torch_cpu, mode):
    from servesim import Batch, PrefillChunk, simulate

    device = _device()
    run, trace, real, steps, logits = _real_run(paged, device, mode, torch_cpu)
    if mode == "replay":  # the batches are those of the virtual run, in order
        virtual = simulate(trace, paged, device, budget=BUDGET)
        assert _batches(run) == [
            (e.batch.decode, tuple((c.id, c.tokens) for c in e.batch.prefill), e.batch.preempt)
            for e in virtual.events
        ]
    preempted = [rid for e in run["events"] for rid in e["preempt"]]
    assert len(preempted) >= 3  # the trace forces several preemptions
    # what the runner executed, submission by submission: the engine's batch ...
    executed = [
        (s.batch.decode, tuple((c.id, c.tokens) for c in s.batch.prefill), s.batch.preempt)
        for s in real.submissions
    ]
    assert executed == _batches(run)
    # ... and after it the pages each request holds, as the device rules count them
    events = [
        type("E", (), {"batch": Batch(d, [PrefillChunk(i, n) for i, n in p], r), "end_ms": 0})
        for d, p, r in executed
    ]
    expected = list(_virtual_pages(trace, events, device))
    assert [pages for pages, _ in steps] == expected
    assert [e["kvPagesHeld"] for e in run["events"]] == [sum(p.values()) for p in expected]
    assert (
        max(e["kvPagesHeld"] for e in run["events"]) <= device.kv_pages == real.cache.pool.capacity
    )
    assert verify_run(run, trace, run["device"], timing="measured") == []
    assert run["realDevice"]["mode"] == mode
    # a recomputed request's logits at each of its tokens are those of an uninterrupted run
    plain = _uninterrupted_logits(paged, torch_cpu)
    for rid in set(preempted):
        assert len(logits[rid]) == len(plain[rid]) == 12
        for got, want in zip(logits[rid], plain[rid], strict=True):
            assert torch_cpu.allclose(got, want, atol=1e-5, rtol=1e-4)
    assert real.cache.pool.used == 0  # everything finished: every page back


@pytest.mark.parametrize("mode", ["replay", "live"])
def test_swapped_pages_go_to_the_host_and_come_back(paged, torch_cpu, mode):
    from servesim.swapping import swap_long

    device = _device(host_pages=16, swap_ms_per_page=0.05, swap_sync_ms=0.5)
    swapping = swap_long(paged, 0)
    run, trace, real, steps, logits = _real_run(swapping, device, mode, torch_cpu)
    swapped = {rid for e in run["events"] for rid in e.get("swapOut", ())}
    assert len(swapped) >= 1 and any(e.get("swapIn") for e in run["events"])
    for event, (pages, host) in zip(run["events"], steps, strict=True):
        for rid in event.get("swapOut", ()):  # out: on the host, off the device
            assert rid in host and rid not in pages
        for rid in event.get("swapIn", ()):
            assert rid not in host
        assert event["hostPagesHeld"] == sum(host.values())
        assert event["kvPagesHeld"] == sum(pages.values()) <= device.kv_pages
    assert verify_run(run, trace, run["device"], timing="measured") == []
    plain = _uninterrupted_logits(paged, torch_cpu)
    for rid in swapped:
        for got, want in zip(logits[rid], plain[rid], strict=True):
            assert torch_cpu.allclose(got, want, atol=1e-5, rtol=1e-4)
    assert real.executor.host.pool.used == 0 and real.cache.pool.used == 0
