"""The reference ``paged`` on the lab engine against a separate model of vLLM V1's scheduler rules
(``vllm_rules_model.py``): every token time equal on hypothesis traces with tight page pools,
several victims in one step, partial prefills and requesters as victims, and K binding.

vLLM itself is too large for CI; ``benchmarks/paged_vs_vllm.py`` runs the real scheduler beside
the reference on a machine that has it."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import servesim
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from servesim.compact import compact_run, expand_run
from servesim.runfile import build_run
from u08tools import UNIT08, device, make_trace
from vllm_rules_model import Device, simulate

from grader import reference, verify


@st.composite
def cases(draw):
    """A trace, B, K, M and the page size. Half are crowded: short prompts of two lengths
    arriving together with long outputs on 4-token pages, so that many decodes cross a page
    boundary in the same step and one step preempts several requests."""
    crowded = draw(st.booleans())
    page = 4 if crowded else draw(st.sampled_from([4, 16]))
    requests = []
    for k in range(draw(st.integers(3 if crowded else 1, 14))):
        requests.append(
            {
                "id": f"r{k}",
                "arrivalMs": draw(st.integers(0, 4 if crowded else 60)) / 2,
                "inputTokens": draw(st.sampled_from([4, 8]) if crowded else st.integers(1, 90)),
                "outputTokens": draw(st.integers(8, 40) if crowded else st.integers(1, 40)),
            }
        )
    alone = max(math.ceil((r["inputTokens"] + r["outputTokens"]) / page) for r in requests)
    pool = draw(st.integers(alone, 2 * alone))  # tight: at most twice what one request needs
    cap = draw(st.one_of(st.none(), st.integers(1, 8)))
    budget = draw(st.integers(cap or 1, 64))
    return requests, budget, cap, pool, page


def compare(requests, budget, cap, pool, page) -> Counter:
    """Assert equal token times (and the same rejections); return what the model saw.

    The engine's run must also pass the grader's replay (the device rules, from the run file
    alone) and be written compact: every decode step holds every running request."""
    model, seen = simulate(requests, budget, cap, pool, Device(page=page))
    dev = device(
        prefill_ms_per_token=Device.p,
        decode_batch_ms=Device.d0,
        decode_ms_per_seq=Device.d1,
        overhead_ms=Device.o,
        max_active=cap,
        kv_pages=pool,
        page_tokens=page,
    )
    trace = make_trace(requests)
    paged = reference.solution_policies(UNIT08).paged
    timeline = servesim.simulate(trace, lambda view: paged(view, budget), dev, budget=budget)
    run = build_run("paged", {"budget": budget}, dev, timeline, None, extended=True)
    run["limits"]["budget"] = budget
    ours = {r["id"]: r["tokenTimesMs"] for r in run["requests"] if r["status"] == "completed"}
    assert set(ours) == set(model), "different requests completed"
    for rid, times in model.items():
        assert ours[rid] == pytest.approx(times, abs=1e-9), f"{rid}: token times differ"
    assert run["summary"]["recomputes"] == seen["preemptions"]
    problems, _ = verify.replay_run(run, trace.raw, dev.to_json())
    assert problems == [], problems[0].message
    compact = compact_run(run, timeline)
    assert compact is not None and expand_run(compact) == run
    return seen


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_paged_equals_the_vllm_rules_model(case):
    compare(*case)


def test_the_cases_reach_every_rule():
    """The strategy is not vacuous: a fixed sample of it holds every situation the rules treat
    specially, and the engine agrees with the model on all of them."""
    total = Counter()

    @settings(max_examples=120, deadline=None, database=None, derandomize=True)
    @given(case=cases())
    def sample(case):
        total.update(compare(*case))

    sample()
    for what in (
        "steps with several victims",
        "partial prefill victims",
        "requester victims",
        "K binding",
    ):
        assert total[what] >= 3, f"only {total[what]} {what} in the sample: {dict(total)}"
