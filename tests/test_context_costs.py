"""A step's cost with the context terms (section 31.3): attention pairs of the prefill chunks
(formula 31.4) and the cached positions each decode reads, charged by the engine, recorded in the
run file and checked by the grader's replay.

The expected times here come from the formulas written out in this file over the run's event
log (each member's cached positions counted by ``labtools.log_contexts``), not from
``servesim.rules``.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import pytest
from labtools import log_contexts
from servesim import Batch, DeviceProfile, PrefillChunk, parse_trace, rules, simulate
from servesim.runfile import build_run

from grader import reference
from grader.units import load_unit
from grader.verify import verify_run

U08 = load_unit("unit08")
solution = reference.solution_policies(U08)

# dyadic coefficients: every sum below is exact in binary floating point
CONTEXT = DeviceProfile(
    prefill_ms_per_token=0.5,
    decode_batch_ms=2.0,
    decode_ms_per_seq=0.25,
    overhead_ms=0.25,
    max_active=3,
    kv_pages=14,
    page_tokens=4,
    prefill_ms_per_context_token=0.0625,
    decode_ms_per_context_token=0.03125,
)
PLAIN = replace(CONTEXT, prefill_ms_per_context_token=0.0, decode_ms_per_context_token=0.0)
TRACE = parse_trace(
    {
        "name": "contexts",
        "requests": [
            {"id": "A", "arrivalMs": 0, "inputTokens": 10, "outputTokens": 6},
            {"id": "B", "arrivalMs": 1, "inputTokens": 7, "outputTokens": 4},
            {"id": "C", "arrivalMs": 2, "inputTokens": 19, "outputTokens": 3},
            {"id": "D", "arrivalMs": 3, "inputTokens": 5, "outputTokens": 5},
            {"id": "E", "arrivalMs": 90, "inputTokens": 3, "outputTokens": 2},
        ],
    }
)
POLICIES = [("budgeted", {"budget": 6}), ("paged", {"budget": 6}), ("paged", {"budget": 16})]


def step_ms(device: DeviceProfile, chunks, decode_contexts) -> float:
    """One step by the formula: chunks are (q new positions, s cached), decodes their s."""
    pairs = sum(q * s + q * (q + 1) // 2 for q, s in chunks)
    ms = device.overhead_ms + device.prefill_ms_per_token * sum(q for q, _ in chunks)
    ms += device.prefill_ms_per_context_token * pairs
    if decode_contexts:
        ms += device.decode_batch_ms + device.decode_ms_per_seq * len(decode_contexts)
        ms += device.decode_ms_per_context_token * sum(decode_contexts)
    return ms


def expected_times(run: dict, device: DeviceProfile):
    """Each event's end and each request's token times, from the event log and the formula."""
    prompt = {r["id"]: r["inputTokens"] for r in run["requests"]}
    arrivals = {r["arrivalMs"] for r in run["requests"]}
    prefilled, target = dict.fromkeys(prompt, 0), dict(prompt)
    tokens = {rid: [] for rid in prompt}
    ends, previous_end = [], 0.0
    for event, cache in zip(run["events"], log_contexts(run), strict=True):
        start = event["startMs"]
        # a step starts when the previous one ends, or later at an arrival (an idle device)
        assert start == previous_end or (start > previous_end and start in arrivals)
        for rid in event.get("preempt", []):
            prefilled[rid], target[rid] = 0, prompt[rid] + len(tokens[rid])
        chunks = [(c["tokens"], cache[c["id"]]) for c in event["prefill"]]
        end = start + step_ms(device, chunks, [cache[rid] for rid in event["decode"]])
        for c in event["prefill"]:
            prefilled[c["id"]] += c["tokens"]
            if prefilled[c["id"]] == target[c["id"]]:
                tokens[c["id"]].append(end)
        for rid in event["decode"]:
            tokens[rid].append(end)
        ends.append(end)
        previous_end = end
    return ends, tokens


def run_on(device, policy, params, trace=TRACE) -> dict:
    return reference.run_reference(U08, trace, policy, params, device)


@pytest.mark.parametrize("policy, params", POLICIES)
def test_durations_and_token_times_follow_the_formula(policy, params):
    run = run_on(CONTEXT, policy, params)
    ends, tokens = expected_times(run, CONTEXT)
    assert [e["endMs"] for e in run["events"]] == ends
    assert {r["id"]: r["tokenTimesMs"] for r in run["requests"]} == tokens
    assert run["device"]["prefillMsPerContextToken"] == 0.0625  # the run file records them
    assert run["device"]["decodeMsPerContextToken"] == 0.03125
    assert verify_run(run, TRACE.raw, run["device"]) == []
    # the context terms make this timeline longer than the plain device's
    plain = run_on(PLAIN, policy, params)
    assert run["summary"]["allDoneMs"] > plain["summary"]["allDoneMs"]


def test_a_recomputed_prefill_is_priced_from_an_empty_cache():
    """X is preempted after a decode; its recompute prefill (prompt + emitted tokens) starts
    from 0 cached positions, and its next decode reads all of them."""
    steps = iter(
        [
            Batch(prefill=[PrefillChunk("X", 8)]),
            Batch(decode=["X"], prefill=[PrefillChunk("Y", 4)]),
            Batch(decode=["Y"], preempt=["X"]),
            Batch(prefill=[PrefillChunk("X", 10)]),
            Batch(decode=["X"]),
        ]
    )
    trace = parse_trace(
        {
            "name": "recompute",
            "requests": [
                {"id": "X", "arrivalMs": 0, "inputTokens": 8, "outputTokens": 4},
                {"id": "Y", "arrivalMs": 0, "inputTokens": 4, "outputTokens": 2},
            ],
        }
    )
    timeline = simulate(trace, lambda view: next(steps), CONTEXT)
    run = build_run("scripted", {}, CONTEXT, timeline, None, extended=True)
    assert run["summary"]["recomputes"] == 1
    ends, tokens = expected_times(run, CONTEXT)
    assert [e["endMs"] for e in run["events"]] == ends
    assert {r["id"]: r["tokenTimesMs"] for r in run["requests"]} == tokens
    # by hand: the recompute prefill is 8 + 2 emitted = 10 tokens after 0 cached, 55 pairs;
    # the last decode reads those 10 positions
    assert ends[3] - ends[2] == 0.25 + 0.5 * 10 + 0.0625 * 55
    assert ends[4] - ends[3] == 0.25 + 2.0 + 0.25 + 0.03125 * 10
    assert verify_run(run, trace.raw, CONTEXT.to_json()) == []


@pytest.mark.parametrize("policy, params", POLICIES)
def test_replay_rejects_step_times_that_ignore_the_context_terms(policy, params):
    honest = run_on(PLAIN, policy, params)
    forged = {**honest, "device": CONTEXT.to_json()}
    problems = verify_run(forged, TRACE.raw, CONTEXT.to_json())
    assert any(p.statistic == "events[].endMs" for p in problems), problems
    assert any("by the device rules" in p.message for p in problems)
    assert verify_run(honest, TRACE.raw, PLAIN.to_json()) == []


def test_zero_coefficients_are_not_written():
    """Profiles without context terms keep their run files as they were."""
    assert "prefillMsPerContextToken" not in PLAIN.to_json()
    assert "decodeMsPerContextToken" not in PLAIN.to_json()
    assert DeviceProfile.from_json(CONTEXT.to_json()) == CONTEXT


def test_chunking_a_prompt_keeps_its_attention_pairs():
    """Exercise 31.4 on the engine: a 12-token prompt in chunks of 12, 5 and 1 is charged
    12 * 13 / 2 pairs in all; each extra chunk adds its overhead and per-token costs only."""
    only_pairs = DeviceProfile(
        prefill_ms_per_token=0.0, overhead_ms=0.0, prefill_ms_per_context_token=1.0
    )
    trace = parse_trace(
        {
            "name": "p",
            "requests": [{"id": "P", "arrivalMs": 0, "inputTokens": 12, "outputTokens": 1}],
        }
    )
    for chunk in (12, 5, 1):
        timeline = simulate(trace, partial(solution.budgeted, budget=chunk), only_pairs)
        assert timeline.events[-1].end_ms == 12 * 13 / 2
        assert len(timeline.events) == -(-12 // chunk)


def test_a_policy_prices_a_candidate_step_from_the_view():
    """``view.step_ms`` is the device's charge for a batch at the current state (t-hat)."""
    seen = []

    def policy(view):
        running = [s.id for s in view.running]
        waiting = list(view.waiting)
        batch = Batch(decode=running, prefill=[PrefillChunk(waiting[0].id, 4)] if waiting else [])
        if waiting:
            s = waiting[0].context_tokens
            cached = [view.sequence(rid).context_tokens for rid in running]
            seen.append((view.step_ms(batch), step_ms(CONTEXT, [(4, s)], cached)))
        return batch

    trace = parse_trace(
        {
            "name": "t",
            "requests": [
                {"id": "A", "arrivalMs": 0, "inputTokens": 8, "outputTokens": 5},
                {"id": "B", "arrivalMs": 0, "inputTokens": 12, "outputTokens": 2},
            ],
        }
    )
    timeline = simulate(trace, policy, CONTEXT)
    assert len(seen) == 5 and all(a == b for a, b in seen)
    built = build_run("t", {}, CONTEXT, timeline, None, extended=True)
    assert [e["endMs"] for e in built["events"]] == expected_times(built, CONTEXT)[0]
    terms = rules.chunk_terms(4, 8) + rules.decode_terms(9)
    assert rules.work_ms(CONTEXT, terms) == step_ms(CONTEXT, [(4, 8)], [9]) - CONTEXT.overhead_ms
