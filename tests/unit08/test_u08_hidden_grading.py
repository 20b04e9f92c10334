"""Unit 08's hidden-trace grading: reference full marks, stubs 0, every mutant killed by a hidden
case of its part, script cases for measure.py, and the goodput challenge with its leaderboard."""

from __future__ import annotations

import json

import pytest

from grader import casekinds
from grader.cases import Kind, load_grading
from grader.course.golden import golden_path
from grader.grading.grade import Status, grade_submission
from grader.grading.inprocess import run_in_process
from grader.grading.leaderboard import (
    LEADERBOARD_GOODPUT,
    LEADERBOARD_P99_TTFT,
    LEADERBOARD_RELATIVE,
)
from grader.grading.submission import Submission
from grader.sandbox import ChildResult
from grader.traces.mutants import list_mutants
from grader.units import load_unit

UNIT = load_unit("unit08")
GRADING = load_grading(UNIT)
CASES = {case.id: case for case in GRADING.cases}

# mutant -> (the part whose hidden cases must catch it, the failure kinds it may get there)
EXPECTED = {
    "static_admits_into_group": ("batching", {Status.WRONG_SCHEDULE}),
    "static_ignores_cap": ("batching", {Status.CRASH}),
    "static_decodes_whole_group": ("batching", {Status.CRASH}),
    # answers against the contract (servesim/contract.py): the engine stops the run
    "static_returns_group": ("batching", {Status.CRASH}),
    "continuous_decodes_sequences": ("batching", {Status.CRASH}),
    "budgeted_float_chunks": ("budgets", {Status.CRASH}),
    "budgeted_marks_started": ("budgets", {Status.CRASH}),
    "fair_chunks_by_tenant": ("fair", {Status.CRASH}),
    "admit_forgets_true": ("challenge", {Status.CRASH}),
    "static_never_waits": ("batching", {Status.WRONG_SCHEDULE}),
    "continuous_shortest_first": ("batching", {Status.WRONG_SCHEDULE}),
    "continuous_one_per_step": ("batching", {Status.WRONG_SCHEDULE}),
    "continuous_decodes_first": ("batching", {Status.WRONG_SCHEDULE}),
    "decodes_not_in_budget": ("budgets", {Status.CRASH}),
    "budgeted_budget_plus_one": ("budgets", {Status.CRASH}),
    "budgeted_one_chunk": ("budgets", {Status.WRONG_SCHEDULE}),
    "budgeted_exact_fit_waits": ("budgets", {Status.WRONG_SCHEDULE}),
    "paged_preempts_largest": ("budgets", {Status.WRONG_SCHEDULE}),
    "overtakes_blocked_head": ("budgets", {Status.WRONG_SCHEDULE}),
    "reserves_actual_output": ("budgets", {Status.WRONG_SCHEDULE}),
    "reserves_prompt_only": ("budgets", {Status.CRASH}),
    "preempts_oldest": ("budgets", {Status.WRONG_SCHEDULE}),
    "starts_after_preemption": ("budgets", {Status.WRONG_SCHEDULE}),
    "paged_sets_aside_prompt": ("budgets", {Status.WRONG_SCHEDULE}),
    "paged_reserves_declared": ("budgets", {Status.WRONG_SCHEDULE}),
    "victims_appended": ("budgets", {Status.WRONG_SCHEDULE}),
    "victims_named_oldest_first": ("budgets", {Status.WRONG_SCHEDULE}),
    "uncapped_credits": ("fair", {Status.WRONG_SCHEDULE}),
    "credits_kept_when_idle": ("fair", {Status.WRONG_SCHEDULE}),
    "round_robin_restarts": ("fair", {Status.WRONG_SCHEDULE}),
    "timed_ignores_context": ("timed", {Status.WRONG_SCHEDULE}),
    "timed_target_without_overhead": ("timed", {Status.WRONG_SCHEDULE}),
    "timed_no_prefill_share": ("timed", {Status.WRONG_SCHEDULE}),
    "timed_prices_prefill_alone": ("timed", {Status.WRONG_SCHEDULE}),
    "measure/goodput_over_succeeded": ("measure", {Status.WRONG_ANSWER}),
    "measure/rejected_not_submitted": ("measure", {Status.WRONG_ANSWER}),
    "measure/goodput_window_by_finish": ("measure", {Status.WRONG_ANSWER}),
    "measure/one_token_fails_tpot": ("measure", {Status.WRONG_ANSWER}),
    "measure/slo_ignores_status": ("measure", {Status.WRONG_ANSWER}),
    "measure/area_unclipped": ("measure", {Status.WRONG_ANSWER}),
    "measure/residence_unclipped": ("measure", {Status.WRONG_ANSWER}),
    "measure/token_weighted_is_request_weighted": ("measure", {Status.WRONG_ANSWER}),
    "measure/tpot_one_token_as_zero": ("measure", {Status.WRONG_ANSWER}),
    # the protocol's pieces (issue 19's four named mistakes first)
    "measure/verdict_ignores_interval": ("measure", {Status.WRONG_ANSWER}),
    "measure/window_includes_warmup": ("measure", {Status.WRONG_ANSWER}),
    "measure/quality_shared_across_replications": ("measure", {Status.WRONG_ANSWER}),
    "measure/succeeded_excludes_quality": ("measure", {Status.WRONG_ANSWER}),
    "measure/interval_normal_quantile": ("measure", {Status.WRONG_ANSWER}),
    "measure/interval_population_sd": ("measure", {Status.WRONG_ANSWER}),
    "measure/steady_counts_window_requests_only": ("measure", {Status.WRONG_ANSWER}),
    # issue 35: the percentile's index, the window's open end
    "measure/p99_lower_rank": ("measure", {Status.WRONG_ANSWER}),
    "measure/p99_leaves_out_unserved": ("measure", {Status.WRONG_ANSWER}),
    "measure/goodput_window_closed": ("measure", {Status.WRONG_ANSWER}),
}

# A challenge entry that beats the reference: shortest prompt first among requests that have
# never started (the reference serves them in arrival order), the rest as the reference's paged.
BETTER = b"""

from dataclasses import replace


def challenge(view, budget):
    started = [s for s in view.waiting if s.started]
    fresh = sorted((s for s in view.waiting if not s.started), key=lambda s: s.prefill_target)
    return paged(replace(view, waiting=tuple(started + fresh)), budget)
"""

# A worse one: one request at a time, whole prompt, then decode it alone.
WORSE = b"""

def challenge(view, budget):
    if view.running:
        return Batch.decode_of(view.running)
    head = view.waiting[0]
    return Batch(prefill=[PrefillChunk(head.id, min(budget, head.remaining_prefill))])
"""

# Runs past the device's K: the engine refuses the batch.
BREAKS_K = b"""

def challenge(view, budget):
    decode = [s.id for s in view.running]
    return Batch(prefill=[PrefillChunk(s.id, 1) for s in view.waiting], decode=decode)
"""


def solution_files() -> dict[str, bytes]:
    return {name: (UNIT.solutions_dir / name).read_bytes() for name in UNIT.editable}


def with_policies(extra: bytes) -> Submission:
    files = solution_files()
    files["policies.py"] += extra
    return Submission(files, source="test")


def case_ids(part: str | None = None, kind: Kind | None = None, hidden=None) -> list[str]:
    return [
        c.id
        for c in GRADING.cases
        if (part is None or c.part == part)
        and (kind is None or c.kind is kind)
        and (hidden is None or c.hidden == hidden)
    ]


def golden(case_id: str) -> dict:
    return json.loads(golden_path(UNIT, CASES[case_id]).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def reference_report():
    return grade_submission(UNIT, UNIT.solutions_dir, runner=run_in_process)


# The tests that read the reference's report run on one xdist worker, which grades it once.
WITH_REFERENCE = pytest.mark.xdist_group("unit08-reference-report")


@WITH_REFERENCE
def test_reference_gets_full_marks_on_every_case(reference_report):
    assert reference_report.score == reference_report.max_score > 0
    failed = [c.id for c in reference_report.cases if c.status is not Status.PASSED]
    assert failed == []


def test_every_exact_part_has_hidden_cases_and_metamorphic_copies():
    for part in ("batching", "budgets", "fair", "timed", "measure", "challenge"):
        assert len(case_ids(part, hidden=True)) >= 3, part
    relabelled = [c for c in GRADING.cases if c.transform is not None]
    assert {c.part for c in relabelled} >= {"batching", "budgets", "fair", "timed"}
    assert all(c.hidden for c in relabelled)
    # hidden cases vary K, M, the context terms and the queue cap, not only the lab's device
    assert {key for c in GRADING.cases for key in c.device} == {
        "maxActive",
        "kvPages",
        "prefillMsPerContextToken",
        "decodeMsPerContextToken",
    }
    assert any(c.queue_cap for c in GRADING.cases)


def test_stubs_score_zero():
    report = grade_submission(UNIT, UNIT.lab_dir, runner=run_in_process)
    assert report.score == 0
    assert {c.status for c in report.cases} == {Status.NOT_IMPLEMENTED}


def test_corpus_covers_every_part_and_each_mutant_says_what_is_wrong():
    mutants = {m.name: m for m in list_mutants(UNIT)}
    assert set(mutants) == set(EXPECTED)
    assert all(m.summary for m in mutants.values())
    assert {m.target for m in mutants.values()} == {"policies.py", "measure.py"}
    assert {part for part, _ in EXPECTED.values()} == {
        "batching",
        "budgets",
        "fair",
        "timed",
        "measure",
        "challenge",
    }


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_mutant_loses_points_on_a_hidden_case_of_its_part(name):
    mutant = next(m for m in list_mutants(UNIT) if m.name == name)
    part, kinds = EXPECTED[name]
    submission = mutant.submission(UNIT)
    # the submission is the reference with one file mutated, so other parts cannot fail it
    assert set(submission.files) == set(UNIT.editable)
    report = grade_submission(UNIT, submission, cases=case_ids(part), runner=run_in_process)
    killers = report.killed_by()
    assert killers, f"{name} survives every hidden case of part {part}"
    statuses = {c.status for c in report.cases if c.id in killers}
    assert statuses <= kinds, f"{name}: {statuses}"


def test_script_cases_and_challenge_run_in_the_sandbox():
    ids = ["measure-goodput-deadlines", "measure-tpot-steady", "challenge-burst"]
    report = grade_submission(UNIT, UNIT.solutions_dir, cases=ids)
    assert [c.status for c in report.cases] == [Status.PASSED] * 3
    assert "in-process" not in report.isolation
    stub = grade_submission(UNIT, UNIT.lab_dir, cases=ids[:2])
    assert {c.status for c in stub.cases} == {Status.NOT_IMPLEMENTED}
    # each names the measure.py function its case tests, as a policy case names its policy
    assert [c.feedback.split(": ")[1].split(" (")[0] for c in stub.cases] == [
        "goodput() in measure.py",
        "tpot_means() in measure.py",
    ]


def test_script_answers_are_compared_value_by_value():
    want = golden("measure-goodput-deadlines")["answer"]["answers"]
    assert casekinds.same_value(json.loads(json.dumps(want)), want)
    tampered = json.loads(json.dumps(want))
    tampered[1]["attainment_over_submitted"] += 1e-6
    assert not casekinds.same_value(tampered, want)
    assert casekinds.answer_share(tampered, want) == pytest.approx(2 / 3)
    assert not casekinds.same_value([True], [1])  # a bool is not a number


def qualifying(run: dict, slo: dict) -> int:
    """The goodput rule written out again, independently of grader.casekinds: requests that
    arrived in [first arrival, last arrival) (the unit's window with no warm-up and a cool-down
    of one) and completed within the SLO."""
    arrivals = [r["arrivalMs"] for r in run["requests"]]
    first, last = min(arrivals), max(arrivals)
    count = 0
    for r in run["requests"]:
        if r["status"] != "completed" or not first <= r["arrivalMs"] < last:
            continue
        tpot_ok = r["tpotMs"] is None or r["tpotMs"] <= slo.get("tpotMs", float("inf"))
        count += r["ttftMs"] <= slo.get("ttftMs", float("inf")) and tpot_ok
    return count


def test_goodput_score_follows_the_stated_formula():
    for case_id in case_ids(kind=Kind.GOODPUT):
        run, slo = golden(case_id)["run"], CASES[case_id].slo
        arrivals = [r["arrivalMs"] for r in run["requests"]]
        score = casekinds.goodput_score(run["requests"], slo)
        assert score.qualifying == qualifying(run, slo) > 0
        span_s = (max(arrivals) - min(arrivals)) / 1000
        assert score.goodput_per_s == pytest.approx(score.qualifying / span_s)


@WITH_REFERENCE
def test_better_policy_gets_full_points_and_a_higher_leaderboard_goodput(reference_report):
    ids = case_ids(kind=Kind.GOODPUT)
    better = grade_submission(UNIT, with_policies(BETTER), cases=ids, runner=run_in_process)
    ref = {c.id: c for c in reference_report.cases}
    for case in better.cases:
        assert case.status is Status.PASSED and case.points == case.max_points  # capped at 1
        assert case.metrics["goodput"] > ref[case.id].metrics["goodput"]
    mine = dict((e["name"], e["value"]) for e in better.leaderboard())
    theirs = dict((e["name"], e["value"]) for e in reference_report.leaderboard())
    assert mine[LEADERBOARD_GOODPUT] > theirs[LEADERBOARD_GOODPUT]


@WITH_REFERENCE
def test_worse_policy_scores_its_goodput_share(reference_report):
    ids = case_ids(kind=Kind.GOODPUT)
    worse = grade_submission(UNIT, with_policies(WORSE), cases=ids, runner=run_in_process)
    ref = {c.id: c for c in reference_report.cases}
    below = [c for c in worse.cases if c.status is Status.BELOW_REFERENCE]
    assert below, "the one-at-a-time policy should lose goodput somewhere"
    for case in worse.cases:
        share = min(1.0, case.metrics["goodput"] / ref[case.id].metrics["goodput"])
        assert case.points == round(case.max_points * share, 2)
        assert case.status is (Status.PASSED if share >= 1 else Status.BELOW_REFERENCE)


def test_policy_breaking_a_device_rule_scores_zero():
    ids = case_ids(kind=Kind.GOODPUT)
    report = grade_submission(UNIT, with_policies(BREAKS_K), cases=ids, runner=run_in_process)
    assert {c.status for c in report.cases} == {Status.CRASH}
    assert report.score == 0
    board = dict((e["name"], e["value"]) for e in report.leaderboard())
    assert board == {LEADERBOARD_GOODPUT: 0, LEADERBOARD_RELATIVE: 0}  # no valid run: no p99


def test_forged_run_that_breaks_a_device_rule_scores_zero():
    """A run file whose schedule breaks a rule (e.g. from a patched engine) is invalid: 0."""
    case = CASES["challenge-burst"]
    trace_path = UNIT.lab_dir / "traces" / "burst.json"
    made = run_in_process(UNIT.lab_dir, solution_files(), trace_path, case.argv())
    forged = json.loads(made.output)
    first = forged["runs"][0]["events"][0]["prefill"][0]
    first["tokens"] += 1  # one prompt token more than the request has

    def runner(lab_dir, files, trace_path, argv, limits, **kw):
        data = json.dumps(forged).encode()
        return ChildResult(0, "", "", False, data, "forged")

    report = grade_submission(UNIT, UNIT.solutions_dir, cases=[case.id], runner=runner)
    assert report.cases[0].status is Status.INVALID_SCHEDULE, report.cases[0].staff_detail
    assert "breaks a device rule" in report.cases[0].staff_detail
    assert report.cases[0].points == 0
    assert report.leaderboard()[0]["value"] == 0


GRADESCOPE_LEADERBOARD = {
    "type": "array",
    "minItems": 1,
    "items": {
        "type": "object",
        "required": ["name", "value"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "value": {"type": ["number", "string"]},
            "order": {"enum": ["asc", "desc"]},
        },
    },
}


@WITH_REFERENCE
def test_gradescope_results_carry_a_leaderboard_in_the_documented_format(reference_report):
    """Gradescope's leaderboard spec: a top-level ``leaderboard`` array of {name, value,
    optional order "asc"|"desc" (default desc)}."""
    import jsonschema

    results = reference_report.to_gradescope()
    jsonschema.validate(results["leaderboard"], GRADESCOPE_LEADERBOARD)
    entries = {e["name"]: e for e in results["leaderboard"]}
    assert entries[LEADERBOARD_GOODPUT]["order"] == "desc"
    assert entries[LEADERBOARD_P99_TTFT]["order"] == "asc"
    scored = [c for c in reference_report.cases if c.metrics]
    mean = sum(c.metrics["goodput"] for c in scored) / len(scored)
    assert entries[LEADERBOARD_GOODPUT]["value"] == float(f"{mean:.3g}")  # 3 significant figures
    worst = max(c.metrics["p99TtftMs"] for c in scored)
    assert entries[LEADERBOARD_P99_TTFT]["value"] == float(f"{worst:.3g}")
    assert json.loads(json.dumps(results)) == results


@pytest.mark.parametrize("shift", ["later", "earlier"])
def test_cancelling_at_the_wrong_step_boundary_is_an_invalid_schedule(shift):
    """The engine cancels, not the policy, so "cancelling at the wrong boundary" is a forged
    run file (a patched engine): the replay must reject it."""
    from grader import verify

    doc = golden("budgeted-deadlines-b128")
    run = json.loads(json.dumps(doc["run"]))
    trace = json.loads((UNIT.traces_dir / "hidden" / "deadlines.json").read_text("utf-8"))
    ends = sorted({e["endMs"] for e in run["events"]})
    victim = next(r for r in run["requests"] if r["status"] == "cancelled")
    at = ends.index(victim["statusMs"])
    victim["statusMs"] = ends[at + 1] if shift == "later" else ends[at - 1]
    problems, _ = verify.replay_run(run, trace, doc["device"])
    invalid = [p for p in problems if p.kind is verify.ProblemKind.INVALID_SCHEDULE]
    assert invalid and "cancel" in invalid[0].message
    untouched, _ = verify.replay_run(doc["run"], trace, doc["device"])
    assert untouched == []
