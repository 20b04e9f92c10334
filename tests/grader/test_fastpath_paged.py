"""The staff fast path of ``paged`` (vLLM V1's scheduler) against the lab engine.

Every comparison is ``==`` on whole run entries (token times, events with their preemptions,
per-request metrics and recomputes, the summary), the fast side expanded from its compact form;
the command line's compact files are compared byte for byte. Traces: the lesson's and the hidden
ones (their requests as the fast path covers them), random traces with tight pools (hypothesis,
and a seeded sweep that proves it meets several victims in one step, partial prefills as
victims, the requester as its own victim and K binding), and 1,000 Azure requests.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import pytest
import servesim
from hypothesis import given, settings
from hypothesis import strategies as st
from labtools import affine_devices, rows_trace

from grader import fastpath, reference
from grader.units import load_unit

U08 = load_unit("unit08")
AZURE = Path(__file__).resolve().parent.parent / "data" / "azure-conv-1000.json"
AFFINE = {"prefill_ms_per_token": 0.1, "decode_batch_ms": 20.0, "decode_ms_per_seq": 0.05}
PLAIN = ("id", "arrivalMs", "inputTokens", "outputTokens")
paged = reference.solution_policies(U08).paged


def fast_run(trace, device, budget, fmt="full"):
    return fastpath.reference_run(U08, "paged", {"budget": budget}, trace, device, fmt, True)


def assert_same(trace, device, budget):
    """The fast path equals the lab engine on ``paged``; returns the lab's run entry."""
    lab = reference.run_reference(U08, trace, "paged", {"budget": budget}, device)
    fast = fast_run(trace, device, budget)
    assert fast is not None, "the fast path declined a run it models"
    assert fast == lab
    return lab


def plain(trace):
    """``trace`` with only the fields the fast path covers (it declines the others)."""
    doc = {**trace.raw, "requests": [{k: r[k] for k in PLAIN} for r in trace.raw["requests"]]}
    return servesim.parse_trace(doc)


def tightest_pool(trace, device) -> int:
    """The smallest pool that rejects nobody: the largest request's pages."""
    return max(device.pages_for(r.input_tokens + r.output_tokens) for r in trace.requests)


# -- the lesson's and the hidden traces -------------------------------------------------------

PAGED_CASES = [c for c in U08.doc["grading"]["cases"] if c.get("policy") == "paged"]


@pytest.mark.parametrize("case", PAGED_CASES, ids=[c["id"] for c in PAGED_CASES])
def test_graded_paged_cases(case):
    """Every graded ``paged`` case's trace, device and budget (unit 08-only fields dropped)."""
    trace = reference.load_trace(U08, case["trace"])
    base = reference.device_profile(U08).to_json()
    device = servesim.DeviceProfile.from_json(base | case.get("device", {}))
    assert_same(plain(trace), device, case["params"]["budget"])


LESSON = [*U08.public_traces, *(p.stem for p in U08.traces_dir.glob("hidden/*.json"))]


@pytest.mark.parametrize("name", LESSON)
@pytest.mark.parametrize("budget", [512, 64])
@pytest.mark.parametrize("cap", [None, 4])
@pytest.mark.parametrize("slack", [None, 0, 8, -3])
def test_lesson_and_hidden_traces(name, budget, cap, slack):
    """Each trace with a pool from its largest request (``slack`` pages more; fewer: the largest
    requests are rejected at arrival), or none."""
    trace = plain(reference.load_trace(U08, name))
    device = reference.device_profile(U08, max_active=cap)
    if slack is not None:
        device = replace(device, kv_pages=max(1, tightest_pool(trace, device) + slack))
    assert_same(trace, device, budget)


# -- random traces with tight pools -----------------------------------------------------------

rows = st.lists(
    st.tuples(st.integers(0, 40).map(lambda q: q / 4), st.integers(1, 48), st.integers(1, 24)),
    min_size=1,
    max_size=14,
)
devices = affine_devices(
    max_active=st.one_of(st.none(), st.integers(1, 6)), page_tokens=st.sampled_from([1, 2, 4, 16])
)


@settings(max_examples=150, deadline=None)
@given(rows=rows, device=devices, budget=st.integers(1, 64), slack=st.integers(-3, 6))
def test_random_tight_pools(rows, device, budget, slack):
    """Pools from a few pages below the largest request's (it is rejected) to a few above."""
    trace = rows_trace(rows)
    device = replace(device, kv_pages=max(1, tightest_pool(trace, device) + slack))
    if all(rejected(device, r) for r in trace.requests):
        return  # nobody to schedule (the fast path declines; tested below)
    assert_same(trace, device, budget)


def rejected(device, request) -> bool:
    return servesim.rules.never_fits(device, request.input_tokens, request.output_tokens)


@dataclass
class Observed:
    """What the reference did at its decision points (read from the views and its batches)."""

    seen: Counter

    def __call__(self, view, budget):
        batch = paged(view, budget)
        holders = list(view.holders)
        victims = [view.sequence(rid) for rid in batch.preempt]
        if len(victims) > 1:
            self.seen["several victims in one step"] += 1
        if any(s.remaining_prefill for s in victims):
            self.seen["a partial prefill as victim"] += 1
        if victims and self._own_victim(view, batch, holders, victims):
            self.seen["the requester as its own victim"] += 1
        cap = view.device.max_active
        starts = [c for c in batch.prefill if not view.sequence(c.id).holds_kv]
        waiting = [s for s in view.waiting if not s.holds_kv]
        left = budget - batch.new_positions
        stopped = cap is not None and view.active + len(starts) == cap
        if stopped and not victims and len(waiting) > len(starts) and left > 0:
            self.seen["K stops a start"] += 1
        return batch

    @staticmethod
    def _own_victim(view, batch, holders, victims) -> bool:
        """The last victim asked for pages itself: the pages free without it covered every
        grant of the step (had it been taken for another holder, they would not)."""
        pages = view.device.pages_for
        granted = holders[: len(holders) - len(victims)]
        grants = {rid: 1 for rid in batch.decode}
        grants |= {c.id: c.tokens for c in batch.prefill}
        free = view.free_pages
        for seq in granted:
            have = seq.context_tokens
            free -= pages(have + grants.get(seq.id, 0)) - pages(have)
        free += sum(pages(s.context_tokens) for s in victims[:-1])
        return free >= 0 and victims[-1] is holders[len(granted)]


def sweep_trace(rng, page: int, lockstep: bool):
    """4-16 random requests; ``lockstep``: prompts of the same whole pages arriving together, so
    that many ask for a page in the same step while the newest hold one page each."""
    prompt = page * rng.randint(1, 3)
    rows = []
    for _ in range(rng.randint(4, 16)):
        if lockstep:
            rows.append((rng.randrange(0, 3) / 4, prompt, rng.randint(1, 30)))
        else:
            rows.append((rng.randrange(0, 60) / 4, rng.randint(1, 64), rng.randint(1, 30)))
    return rows_trace(rows)


def test_sweep_meets_every_preemption_case():
    """Seeded random traces with tight pools: identical runs, and among them steps with several
    victims, partial-prefill victims, the requester as its own victim and K binding."""
    rng = random.Random(23)
    seen = Counter()
    preempted = 0
    for sweep in range(60):
        page = rng.choice([1, 4, 16])
        trace = sweep_trace(rng, page, lockstep=bool(sweep % 2))
        cap = rng.choice([None, 2, 3, 5])
        device = servesim.DeviceProfile(**AFFINE, max_active=cap, page_tokens=page)
        device = replace(device, kv_pages=tightest_pool(trace, device) + rng.randint(0, 3))
        budget = max(rng.choice([8, 16, 48, 128]), cap or 16)
        lab = assert_same(trace, device, budget)
        preempted += lab["summary"]["recomputes"]
        servesim.simulate(trace, partial(Observed(seen), budget=budget), device, budget=budget)
    cases = ("several victims in one step", "a partial prefill as victim")
    cases += ("the requester as its own victim", "K stops a start")
    assert preempted > 100
    assert all(seen[case] >= 3 for case in cases), seen


# -- the Azure conversation trace -------------------------------------------------------------


@pytest.fixture(scope="module")
def azure():
    return servesim.read_trace_file(AZURE)


@pytest.mark.parametrize(
    "cap, slack, budget", [(128, 0, 512), (16, 200, 256)], ids=["K128-tightest-B512", "K16-B256"]
)
def test_azure_tight_pools(azure, cap, slack, budget):
    device = servesim.DeviceProfile(**AFFINE, max_active=cap)
    device = replace(device, kv_pages=tightest_pool(azure, device) + slack)
    lab = assert_same(azure, device, budget)
    assert lab["summary"]["completed"] == len(azure.requests)
    assert lab["summary"]["recomputes"] > 20


def test_command_line_files_are_identical(tmp_path):
    """``infralab simulate --policy paged`` writes the same compact file with either engine."""
    from grader.cli.main import main

    trace = reference.load_trace(U08, "azure-conv-slice")
    device = reference.device_profile(
        U08, kv_pages=tightest_pool(trace, reference.device_profile(U08))
    )
    assert fast_run(trace, device, 512, "compact") is not None
    profile = tmp_path / "device.json"
    profile.write_text(json.dumps(device.to_json()), encoding="utf-8")
    args = ["simulate", "--unit", "unit08", "--reference", "--trace", "azure-conv-slice"]
    args += ["--policy", "paged", "--device-profile", str(profile), "--format", "compact"]
    files = {}
    for engine in ("fast", "lab"):
        files[engine] = tmp_path / f"{engine}.json"
        assert main([*args, "--engine", engine, "--output", str(files[engine])]) == 0
    assert files["fast"].read_bytes() == files["lab"].read_bytes()
    run = json.loads(files["lab"].read_text(encoding="utf-8"))["runs"][0]
    assert run["format"] == "compact" and run["summary"]["recomputes"] > 0


# -- what it declines -------------------------------------------------------------------------


@dataclass(frozen=True)
class SwapDevice(servesim.DeviceProfile):
    """A device with a knob the fast path does not know (as a later engine may add)."""

    swap_pages: int = 0


def test_declines_what_it_does_not_model(azure):
    """Context costs, unit 08-only trace fields, unknown device knobs or parameters, and a trace
    whose every request is rejected."""
    pool = servesim.DeviceProfile(**AFFINE, max_active=128, kv_pages=4000)
    assert fast_run(azure, pool, 512) is not None
    assert fast_run(azure, replace(pool, decode_ms_per_context_token=0.001), 512) is None
    swap = SwapDevice(**AFFINE, max_active=128, kv_pages=4000)
    assert fast_run(azure, swap, 512) is not None
    assert fast_run(azure, replace(swap, swap_pages=64), 512) is None
    alone = rows_trace([(0.0, 40, 10)])  # rejected at arrival: no step at all
    assert fast_run(alone, replace(pool, kv_pages=2), 512) is None
    params = {"budget": 512, "swap": True}
    assert fastpath.reference_run(U08, "paged", params, azure, pool, "full", True) is None
    kv = reference.load_trace(U08, "kv-pages")  # maxOutputTokens: the lab may reject on it
    assert not fastpath.covers(U08, "paged", kv, reference.device_profile(U08))
