"""The tail-cause traces (labs/unit09/tailcases.py) and the reference diagnose(): over several
seeds, the reference ``paged`` scheduler runs each constructed case on the engine and
diagnose() names the cause the trace was built with (mixed cases: both causes)."""

from __future__ import annotations

import pytest
import servesim
from tailtools import backpressure, case_run, measure, tailcases

SEEDS = range(5)
STREAMING = pytest.mark.skipif(backpressure() is None, reason="needs streaming engine (h40stream)")
RUNNABLE = ["none", "overload", "prefill-blocking", "mixed-overload-blocking"]
NEEDS_STREAMING = ["slow-clients", "mixed-blocking-slow"]


def named(diagnosis) -> set[str]:
    return {diagnosis.cause.name, *(c.name for c in diagnosis.also)}


def test_every_kind_is_runnable_here_or_waits_for_streaming():
    assert set(RUNNABLE) | set(NEEDS_STREAMING) == set(tailcases.KINDS)
    for kind in NEEDS_STREAMING:
        assert tailcases.make_case(kind, 0).streaming
    for kind in RUNNABLE:
        assert not tailcases.make_case(kind, 0).streaming


@pytest.mark.parametrize("kind", sorted(tailcases.KINDS))
def test_a_seed_gives_the_same_case_and_another_seed_another(kind):
    assert tailcases.make_case(kind, 3).to_json() == tailcases.make_case(kind, 3).to_json()
    assert tailcases.make_case(kind, 3).trace != tailcases.make_case(kind, 4).trace


@pytest.mark.parametrize("kind", RUNNABLE)
def test_cases_are_valid_traces_and_devices(kind):
    case = tailcases.make_case(kind, 0)
    trace = servesim.parse_trace(case.trace)
    assert len({r.id for r in trace.requests}) == len(trace.requests)
    servesim.DeviceProfile.from_json(case.device)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", RUNNABLE)
def test_diagnose_names_the_constructed_cause(kind, seed):
    got = measure.diagnose(case_run(kind, seed), case_run("baseline", seed))
    assert named(got) == set(tailcases.KINDS[kind]), f"{kind} seed {seed}: {got}"
    assert got.action == measure.ACTIONS[got.cause]


@STREAMING
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", NEEDS_STREAMING)
def test_diagnose_names_slow_clients_on_streaming_runs(kind, seed):
    got = measure.diagnose(case_run(kind, seed), case_run("baseline", seed))
    assert named(got) == set(tailcases.KINDS[kind]), f"{kind} seed {seed}: {got}"
    assert got.evidence.slow is not None and got.evidence.slow.paused.num > 0


def test_runs_without_streaming_fields_have_no_streaming_evidence():
    got = measure.diagnose(case_run("overload", 0))
    assert got.evidence.slow is None


def test_light_load_without_a_baseline_is_not_enough_evidence():
    got = measure.diagnose(case_run("none", 0))
    assert got.cause is measure.Cause.NOT_ENOUGH_EVIDENCE


def test_memory_stays_free_in_every_case():
    """31.13's premise: no preemption, so no prompt token runs twice."""
    for kind in RUNNABLE:
        run = case_run(kind, 0)
        assert all(not event["preempt"] for event in run["events"])
        assert measure.prefill_amplification(run).value == 1.0
