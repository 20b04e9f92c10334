"""The trusted replay: forged run entries break exactly the rule they were forged to break."""

from __future__ import annotations

import copy

import pytest
import servesim

from grader import reference
from grader.verify import ProblemKind, verify_run


def restat(run: dict) -> dict:
    """Recompute a run's statistics from its token times (a forged but self-consistent run)."""
    from servesim.metrics import request_metrics, summarize

    for req in run["requests"]:
        req.update(request_metrics(req["arrivalMs"], req["tokenTimesMs"]))
    run["summary"] = summarize(run["requests"], run["events"])
    return run


@pytest.fixture(scope="module")
def mixed(unit):
    trace = reference.load_trace(unit, "mixed")
    device = reference.device_profile(unit)
    run = reference.run_reference(unit, trace, "fcfs", {}, device)
    return trace, device.to_json(), run


def kinds(problems):
    return {(p.kind, p.statistic) for p in problems}


def by_id(run, rid):
    return next(r for r in run["requests"] if r["id"] == rid)


def test_reference_run_is_clean(mixed, unit):
    trace, device, run = mixed
    assert verify_run(run, trace, device) == []
    assert verify_run(run, trace.raw, device) == []  # a trace document works too


def test_overlap(mixed, unit):
    trace, device, run = copy.deepcopy(mixed)
    event = run["events"][1]
    event["startMs"] -= 0.5
    event["endMs"] -= 0.5
    problems = verify_run(restat(run), trace, device)
    assert (ProblemKind.INVALID_SCHEDULE, "overlap") in kinds(problems)
    assert "starts before the previous submission ends" in problems[0].message


def test_prefill_before_arrival(unit):
    trace = {
        "name": "t",
        "requests": [{"id": "X", "arrivalMs": 5, "inputTokens": 1, "outputTokens": 1}],
    }
    device = reference.device_profile(unit).to_json()
    run = {
        "requests": [
            {
                "id": "X",
                "arrivalMs": 5.0,
                "inputTokens": 1,
                "outputTokens": 1,
                "tokenTimesMs": [1.25],
            }
        ],
        "events": [
            {
                "index": 0,
                "startMs": 0.0,
                "endMs": 1.25,
                "decode": [],
                "prefill": [{"id": "X", "fromToken": 0, "tokens": 1}],
            }
        ],
    }
    problems = verify_run(restat(run), trace, device)
    assert kinds(problems) == {(ProblemKind.INVALID_SCHEDULE, "prefill before arrival")}
    assert "arrives at 5.00 ms" in problems[0].message


def test_a_first_event_before_the_engines_start_is_named_prefill_before_arrival(mixed, unit):
    """The engine's clock starts at 0, so its own batch check admits A (arriving at 0) before an
    event that claims to start earlier: the replay's own arrival claim names it."""
    trace, device, run = copy.deepcopy(mixed)
    first = run["events"][0]
    assert first["prefill"][0]["id"] == "A" and by_id(run, "A")["arrivalMs"] == 0
    first["startMs"], first["endMs"] = first["startMs"] - 0.5, first["endMs"] - 0.5
    problems = verify_run(restat(run), trace, device)
    assert problems[0].statistic == "prefill before arrival"
    assert (
        "event #0 at -0.50 ms" in problems[0].message
        and "'A' arrives at 0.00 ms" in problems[0].message
    )


def test_prefill_beyond_input_tokens(mixed, unit):
    trace, device, run = copy.deepcopy(mixed)
    run["events"][0]["prefill"][0]["tokens"] += 1
    problems = verify_run(restat(run), trace, device)
    assert (ProblemKind.INVALID_SCHEDULE, "prefill beyond inputTokens") in kinds(problems)


def test_decode_before_prefill_done(mixed, unit):
    trace, device, run = copy.deepcopy(mixed)
    # S arrives at 4 ms and is prefilled later: decoding it in event 1 (at 2.25 ms) is too early
    run["events"][1]["decode"].append("S")
    problems = verify_run(restat(run), trace, device)
    assert (ProblemKind.INVALID_SCHEDULE, "decode before first token") in kinds(problems)


def test_wrong_token_count(mixed, unit):
    trace, device, run = copy.deepcopy(mixed)
    last = run["events"].pop()
    for rid in last["decode"]:
        by_id(run, rid)["tokenTimesMs"].pop()
    problems = verify_run(restat(run), trace, device)
    assert kinds(problems) == {(ProblemKind.INVALID_SCHEDULE, "token count")}
    assert "it needs exactly 12" in problems[0].message


def test_token_times_must_match_events(mixed, unit):
    trace, device, run = copy.deepcopy(mixed)
    by_id(run, "A")["tokenTimesMs"][3] += 0.5
    problems = verify_run(restat(run), trace, device)
    assert kinds(problems) == {(ProblemKind.INVALID_SCHEDULE, "tokenTimesMs")}
    assert "token 4 of 'A'" in problems[0].message


def test_requests_must_match_trace(mixed, unit):
    trace, device, run = copy.deepcopy(mixed)
    by_id(run, "L")["outputTokens"] = 3
    problems = verify_run(run, trace, device)
    assert kinds(problems) == {(ProblemKind.INVALID_SCHEDULE, "requests")}


def stretched(run: dict, factor: float) -> dict:
    """The same schedule with every submission lasting ``factor`` times longer (a slower GPU)."""
    out = copy.deepcopy(run)
    clock, ends = 0.0, {}
    for event in out["events"]:
        start = max(clock, event["startMs"] * factor)
        end = start + (event["endMs"] - event["startMs"]) * factor
        ends[event["index"]] = (event["endMs"], end)
        event["startMs"], event["endMs"], clock = start, end, end
    old_to_new = dict(ends.values())
    for req in out["requests"]:
        req["tokenTimesMs"] = [old_to_new[t] for t in req["tokenTimesMs"]]
    return restat(out)


def test_measured_timing_accepts_other_durations(mixed, unit):
    trace, device, run = mixed
    slow = stretched(run, 1.5)
    assert verify_run(slow, trace, device, timing="measured") == []
    virtual = verify_run(slow, trace, device, timing="virtual")
    assert virtual and virtual[0].kind is ProblemKind.INVALID_SCHEDULE


def test_measured_timing_keeps_causality_and_token_checks(mixed, unit):
    trace, device, run = mixed
    slow = stretched(run, 1.5)
    bad = copy.deepcopy(slow)
    by_id(bad, "A")["tokenTimesMs"][-1] += 0.1
    problems = verify_run(restat(bad), trace, device, timing="measured")
    assert kinds(problems) == {(ProblemKind.INVALID_SCHEDULE, "tokenTimesMs")}
    bad = copy.deepcopy(slow)
    bad["events"][2]["startMs"] = bad["events"][1]["startMs"]
    problems = verify_run(restat(bad), trace, device, timing="measured")
    assert (ProblemKind.INVALID_SCHEDULE, "overlap") in kinds(problems)
    bad = copy.deepcopy(slow)
    by_id(bad, "L")["ttftMs"] += 1.0
    problems = verify_run(bad, trace, device, timing="measured")
    assert kinds(problems) == {(ProblemKind.INCONSISTENT_STATS, "ttftMs")}


def test_bad_timing_argument(mixed, unit):
    trace, device, run = mixed
    with pytest.raises(ValueError, match="timing"):
        verify_run(run, trace, device, timing="wall")


def test_safe_text_has_no_details(mixed, unit):
    trace, device, run = copy.deepcopy(mixed)
    by_id(run, "A")["tokenTimesMs"][3] += 0.5
    problem = verify_run(restat(run), trace, device)[0]
    assert "A" not in problem.safe_text().split()
    assert not any(ch.isdigit() for ch in problem.safe_text())


@pytest.mark.parametrize("name", ["mixed", "unseen", "ties", "bursty-gamma"])
def test_capacity_checks_agree_with_the_engine(unit, name):
    """For every cap, the replay rejects a schedule exactly when the engine would not produce
    it: the engine stops with a PolicyError, or (a pool too small for a request alone) rejects
    a request at arrival that the uncapped run completes."""
    from dataclasses import replace

    trace = reference.load_trace(unit, name)
    device = reference.device_profile(unit, page_tokens=2)
    policy = reference.solution_policies(unit).fcfs
    run = reference.run_reference(unit, trace, "fcfs", {}, device)
    outcomes = set()
    for cap in [{"max_active": k} for k in range(1, 6)] + [{"kv_pages": m} for m in range(1, 30)]:
        capped = replace(device, **cap)
        try:
            timeline = servesim.simulate(trace, policy, capped)
            engine_ok = all(s.status is servesim.Status.COMPLETED for s in timeline.sequences)
        except servesim.PolicyError:
            engine_ok = False
        problems = verify_run(run, trace, capped.to_json())
        assert (not problems) == engine_ok, (cap, problems)
        if problems:
            assert problems[0].statistic == next(iter(cap)).replace(
                "max_active", "maxActive"
            ).replace("kv_pages", "kvPages")
        outcomes.add(engine_ok)
    assert outcomes == {True, False}  # the caps really bite somewhere


def test_idle_device_is_allowed_only_within_the_runs_wait_window():
    # unit 08's static batching with a wait window leaves the device idle on purpose; the
    # replay accepts those gaps for the window the run's params state (the grader holds the
    # params to the case's) and no longer
    from grader.units import load_unit

    u08 = load_unit("unit08")
    trace = reference.load_trace(u08, "burst")
    device = replace_k(reference.device_profile(u08), 4)
    run = reference.run_reference(u08, trace, "static", {"bucket": 256, "wait_ms": 300}, device)
    first = min(r["arrivalMs"] for r in run["requests"])
    assert run["events"][0]["startMs"] > first, "the window kept the device idle at the start"
    assert verify_run(run, trace, run["device"]) == []
    shorter = copy.deepcopy(run)
    shorter["params"]["wait_ms"] = 1
    problems = verify_run(shorter, trace, run["device"])
    assert (ProblemKind.INVALID_SCHEDULE, "idle") in kinds(problems)


def replace_k(device, k: int):
    from dataclasses import replace

    return replace(device, max_active=k)


@pytest.mark.parametrize("forgery", ["empty", "twice"])
def test_empty_or_doubled_submission_is_named(mixed, unit, forgery):
    """The engine's own batch check names both (the replay has no copy of it)."""
    trace, device, run = copy.deepcopy(mixed)
    event = next(e for e in run["events"] if e["decode"])
    if forgery == "empty":
        event["decode"], event["prefill"] = [], []
    else:
        event["decode"].append(event["decode"][0])
    problems = verify_run(restat(run), trace, device)
    named = [p for p in problems if p.statistic == "events[]"]
    assert named and named[0].kind is ProblemKind.INVALID_SCHEDULE
    said = "empty batch" if forgery == "empty" else "appears twice"
    assert f"event #{event['index']} at " in named[0].message and said in named[0].message
