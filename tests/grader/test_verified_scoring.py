"""Verify first, then score (issue 20): one normaliser before the verdict, every engine limit
replayed from the case, bounded work on the trusted side, verified leaderboard figures, no
hidden times in student views, and script credit that a constant answer cannot earn."""

from __future__ import annotations

import copy
import json
import os
import time

import pytest
import servesim

from grader import casekinds, verify
from grader.cases import load_grading
from grader.course.golden import case_limits, load_golden
from grader.grading import judging
from grader.grading.grade import Status
from grader.grading.judge import judge
from grader.grading.judging import JudgeJob, JudgeLimits, judge_cases
from grader.grading.report import CaseResult, GradeReport
from grader.grading.verdict import Verdict
from grader.sandbox import ChildResult
from grader.units import load_unit
from grader.verify import ProblemKind
from grader.verify.normalise import oversize
from grader.verify.problems import Collector
from grader.verify.wording import describe_batch

UNIT08 = load_unit("unit08")
GRADING08 = load_grading(UNIT08)


def case08(case_id: str):
    return GRADING08.by_id(case_id)


def trace_doc(unit, case) -> dict:
    from grader.cases import case_trace_doc

    return case_trace_doc(unit, case)


def child_with(document: dict) -> ChildResult:
    return ChildResult(0, "", "", False, json.dumps(document).encode(), "test")


def judged(unit, case, document: dict) -> Verdict:
    golden = load_golden(unit, case)
    return judge(unit, case, trace_doc(unit, case), golden, child_with(document))


def reference_document(unit, case, fmt: str = "full") -> dict:
    """The run file simulate.py writes for ``case`` with the reference (in-process)."""
    from servesim import compact

    from grader import reference

    trace = servesim.parse_trace(trace_doc(unit, case), source=case.trace)
    from grader.course.golden import case_device

    device = case_device(unit, case)
    run = reference.run_reference(
        unit, trace, case.policy, case.params, device, queue_cap=case.queue_cap
    )
    if fmt == "compact":
        timeline = _timeline(unit, case, trace, device)
        run = compact.compact_run(run, timeline)
        assert run is not None
    return {"formatVersion": 1, "trace": trace_doc(unit, case), "runs": [run]}


def _timeline(unit, case, trace, device):
    from grader import reference

    solution = reference.solution_policies(unit)
    spec = next(p for p in unit.policies if p["name"] == case.policy)
    function = getattr(solution, spec["function"])
    admit = getattr(solution, spec["admit"]) if spec.get("admit") else None
    return servesim.simulate(
        trace,
        lambda view: function(view, **case.params),
        device,
        budget=case.params.get("budget"),
        queue_cap=case.queue_cap,
        admit=admit,
    )


# -- one normaliser: compact and full runs are judged alike ----------------------------------


@pytest.mark.parametrize("case_id", ["challenge-deadlines", "paged-kv-b512-m96"])
def test_compact_and_full_reference_runs_are_judged_alike(case_id):
    case = case08(case_id)
    full = judged(UNIT08, case, reference_document(UNIT08, case))
    compact = judged(UNIT08, case, reference_document(UNIT08, case, "compact"))
    assert full.status is compact.status is Status.PASSED, (full, compact)
    assert full.metrics == compact.metrics


def test_compact_entries_with_unknown_fields_are_rejected():
    case = case08("challenge-deadlines")
    document = reference_document(UNIT08, case, "compact")
    columns = document["runs"][0]["requests"]  # compact: the requests as columns
    columns["ttftMs"] = [0.0] * len(columns["id"])
    verdict = judged(UNIT08, case, document)
    assert verdict.status is Status.INVALID_SCHEDULE
    assert "schema" in verdict.summary


def test_goodput_is_computed_from_the_replay_not_the_run_file():
    """A full run whose reported TTFTs are forged is inconsistent; the figures scored for a
    valid run are the ones the replay recomputed."""
    case = case08("challenge-deadlines")
    document = reference_document(UNIT08, case)
    honest = judged(UNIT08, case, document)
    forged = copy.deepcopy(document)
    for req in forged["runs"][0]["requests"]:
        if req["ttftMs"] is not None:
            req["ttftMs"] = 0.0
    assert judged(UNIT08, case, forged).status is Status.INCONSISTENT_STATS
    golden = load_golden(UNIT08, case)
    verified = casekinds.goodput_score(golden["run"]["requests"], case.slo)
    assert honest.metrics["goodput"] == pytest.approx(verified.goodput_per_s)
    assert honest.metrics["p99TtftMs"] == pytest.approx(verified.p99_ttft_ms)


# -- every engine limit replayed from the case -----------------------------------------------


def test_golden_runs_state_the_case_limits():
    for case in GRADING08.cases:
        golden = load_golden(UNIT08, case)
        assert golden["run"]["limits"] == case_limits(UNIT08, case), case.id
    unit07 = load_unit("unit07")
    for case in load_grading(unit07).cases:
        assert case_limits(unit07, case) is None
        assert "limits" not in load_golden(unit07, case)["run"]


def test_a_run_stating_other_limits_is_rejected():
    case = case08("challenge-deadlines")
    document = reference_document(UNIT08, case)
    document["runs"][0]["limits"]["budget"] = None
    verdict = judged(UNIT08, case, document)
    assert verdict.status is Status.INVALID_SCHEDULE
    assert "limits" in verdict.summary


def test_the_replay_takes_the_budget_from_the_case():
    """A step over B breaks the budget rule even when the run file states no budget."""
    case = case08("budgeted-deadlines-b128")
    golden = load_golden(UNIT08, case)
    run = copy.deepcopy(golden["run"])
    doc = trace_doc(UNIT08, case)
    loose = {**case_limits(UNIT08, case), "budget": 64}  # as if the case said B = 64
    problems = verify.verify_run(run, doc, golden["device"], limits=loose)
    assert [p.statistic for p in problems if p.kind is ProblemKind.INVALID_SCHEDULE] == ["budget"]
    run["limits"]["budget"] = None
    assert verify.verify_run(run, doc, golden["device"], limits=loose)
    assert verify.verify_run(golden["run"], doc, golden["device"]) == []


def test_the_replay_enforces_the_queue_cap():
    case = case08("budgeted-deadlines-b256-q5")
    golden = load_golden(UNIT08, case)
    doc = trace_doc(UNIT08, case)
    limits = case_limits(UNIT08, case)
    assert verify.verify_run(golden["run"], doc, golden["device"], limits=limits) == []
    tighter = {**limits, "queueCap": 1}
    problems = verify.verify_run(golden["run"], doc, golden["device"], limits=tighter)
    assert "queueCap" in {p.statistic for p in problems}


def test_idle_gap_is_invalid(unit):
    """Steps that start later than the engine would (an idle device while a request is live)
    break the engine's clock rule; shifting the whole timeline shifts every figure too."""
    from labtools import run_ref

    run = run_ref("mixed", "fcfs")
    device = load_golden(unit, load_grading(unit).by_id("fcfs-mixed"))["device"]
    trace = json.loads((unit.lab_dir / "traces" / "mixed.json").read_text(encoding="utf-8"))
    assert verify.verify_run(run, trace, device) == []
    late = copy.deepcopy(run)
    for event in late["events"][2:]:
        event["startMs"] += 5.0
        event["endMs"] += 5.0
    problems = verify.verify_run(late, trace, device)
    assert "idle" in {p.statistic for p in problems}


# -- bounded work ------------------------------------------------------------------------------


def test_problem_lists_keep_one_message_per_kind():
    found = Collector()
    for n in range(100_000):
        found.add(ProblemKind.INVALID_SCHEDULE, "events[]", f"message {n}")
    (problem,) = found.problems()
    assert problem.message == "message 0 (and 99999 more like it)"


def test_descriptions_quote_a_bounded_part_of_a_step():
    text = describe_batch(["x" * 10_000] * 100_000, [{"id": "y", "fromToken": 0, "tokens": 1}])
    assert len(text) < 400 and "and 99994 more" in text


def test_oversized_runs_are_refused_before_expansion(monkeypatch):
    from servesim import compact

    case = case08("paged-kv-b512-m96")
    doc = trace_doc(UNIT08, case)
    document = reference_document(UNIT08, case, "compact")
    run = document["runs"][0]
    run["slices"] += [[0, 0, 0, 10**9]] * 3
    assert oversize(UNIT08, document, doc).what == "runs[].slices[][3]"

    def never(*args, **kwargs):
        raise AssertionError("expanded before the size check")

    golden = load_golden(UNIT08, case)
    monkeypatch.setattr(compact, "expand_run", never)
    verdict = judge(UNIT08, case, doc, golden, child_with(document))
    assert verdict.status is Status.INVALID_SCHEDULE
    assert "declares more work than its trace allows (runs[].slices[][3])" in verdict.summary

    full = reference_document(UNIT08, case)
    first = full["runs"][0]["requests"][0]["id"]
    full["runs"][0]["events"][0]["decode"] = [first] * 10**6
    started = time.process_time()
    verdict = judge(UNIT08, case, doc, golden, child_with(full))
    assert verdict.status is Status.INVALID_SCHEDULE
    assert "(runs[].events[].decode)" in verdict.summary
    assert time.process_time() - started < 5


def _jobs(unit, ids: list[str]) -> list[JudgeJob]:
    grading = load_grading(unit)
    jobs = []
    for case_id in ids:
        case = grading.by_id(case_id)
        golden = load_golden(unit, case)
        run = golden["run"]
        document = {"formatVersion": 1, "trace": trace_doc(unit, case), "runs": [run]}
        jobs.append(JudgeJob(case, trace_doc(unit, case), golden, child_with(document)))
    return jobs


def test_judging_has_cpu_and_memory_ceilings(unit, monkeypatch):
    """A check that loops or allocates without end stops at the judging child's ceilings; the
    cases after it are judged in a fresh child, and the submission's budget bounds the rest."""
    real = judging.judge

    def misbehaves(unit_, case, *args):
        if case.id == "fcfs-mixed":
            while True:
                pass
        if case.id == "chunked-mixed":
            hog = []
            while True:
                hog.append(bytearray(64 << 20))
        return real(unit_, case, *args)

    monkeypatch.setattr(judging, "judge", misbehaves)
    jobs = _jobs(unit, ["fcfs-unseen", "fcfs-mixed", "chunked-mixed", "chunked-unseen-chunk4"])
    limits = JudgeLimits(case_cpu_s=1.0, total_cpu_s=10.0, memory_mb=256)
    started = time.monotonic()
    out = judge_cases(unit, jobs, limits)
    assert time.monotonic() - started < 60
    statuses = [j.verdict.status for j in out]
    assert statuses == [Status.PASSED, Status.INVALID_SCHEDULE, Status.INVALID_SCHEDULE,
                        Status.PASSED]  # fmt: skip
    assert out[1].verdict.summary == judging.OUT_OF_TIME
    assert out[1].cpu_s > 0
    broke = judge_cases(unit, jobs, JudgeLimits(case_cpu_s=1.0, total_cpu_s=1.0, memory_mb=256))
    assert [j.verdict.summary for j in broke[-2:]] == [judging.NOT_CHECKED] * 2
    assert broke[-1].verdict is not broke[-2].verdict  # each case's own verdict


# -- verified, rounded leaderboard; no hidden times ------------------------------------------


def _goodput_case(metrics: dict, hidden=True) -> CaseResult:
    from grader.cases import Visibility

    visibility = Visibility.HIDDEN if hidden else Visibility.PUBLIC
    return CaseResult("c", "challenge", 1, 1, visibility, Status.PASSED, "", seconds=3.21,
                      metrics=metrics)  # fmt: skip


def test_leaderboard_shows_only_finite_bounded_numbers_rounded():
    bounds = {"goodputMax": 100.0, "ttftMaxMs": 1e6, "referenceGoodput": 4.0}
    cases = [
        _goodput_case({"goodput": 5.35523, "p99TtftMs": 14513.05, **bounds}),
        _goodput_case({"goodput": "11", "p99TtftMs": "LEAK", **bounds}),
        _goodput_case({"goodput": float("nan"), "p99TtftMs": -1.0, **bounds}),
        _goodput_case({"goodput": 1e9, "p99TtftMs": 2e6, **bounds}),
    ]
    report = GradeReport("unit08", cases, "test")
    board = {e["name"]: e["value"] for e in report.leaderboard()}
    relative = 100 * (5.35523 / 4.0) / 4  # the other three count 0: no bounded goodput
    assert board == {
        "goodput (req/s)": 1.34,
        "goodput vs reference (%)": float(f"{relative:.3g}"),
        "p99 TTFT (ms)": 14500.0,
    }
    json.dumps(report.to_gradescope(), allow_nan=False)


def test_student_views_show_no_time_of_hidden_cases():
    report = GradeReport(
        "unit08", [_goodput_case({}, hidden=True), _goodput_case({}, hidden=False)], "test",
        seconds=12.5,
    )  # fmt: skip
    student, staff = report.to_json(), report.to_json(staff=True)
    assert "seconds" not in student and staff["seconds"] == 12.5
    assert "seconds" not in student["cases"][0] and student["cases"][1]["seconds"] == 3.21
    assert staff["cases"][0]["seconds"] == 3.21
    assert "execution_time" not in report.to_gradescope()


# -- credit that a constant cannot earn -------------------------------------------------------


def test_constant_and_majority_answers_earn_nothing():
    want = [False] * 8 + [True] * 2
    assert casekinds.constant_share(want) == 0.8
    assert casekinds.credited_share([False] * 10, want) == 0.0
    assert casekinds.credited_share([True] + [False] * 9, want) == 0.0  # a guess below it
    assert casekinds.credited_share(want, want) == 1.0
    assert casekinds.credited_share([False] * 9 + [True], want) == pytest.approx(0.5)
    assert casekinds.credited_share([True] * 10, [True] * 10) == 1.0


def test_the_constant_baseline_is_the_best_constant_across_the_set():
    """Every unit's cases against every constant: tests/grader/test_constant_answers.py."""
    from grader import constant_answers as ca

    causes = [({"cause": "A", "also": []}, 2)] * 2 + [({"cause": "B", "also": ["A"]}, 1)]
    assert ca.baseline([*causes, ({"x": 1.5}, 2)]) == pytest.approx(4 / 7)
    lists = [([False, False, True], 1), ([True, False], 1)]  # items pooled over the set
    assert ca.baseline(lists) == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert ca.baseline([([1.5, 2.5], 1)]) == 0  # a value that occurs once: only computed
    assert ca.baseline([([1.5, 1.5, 2.5], 1)]) == pytest.approx(2 / 3)  # the most common
    assert ca.no_better_than_constant(4 / 7, 4 / 7) and not ca.no_better_than_constant(1, 1)
    assert not ca.no_better_than_constant(0, 0)  # nothing matched: its own diagnosis stays


def test_constant_meets_slo_scores_nothing_on_a_hidden_case():
    from grader.grading.grade import _points

    case = case08("measure-meets-slo-deadlines")
    golden = load_golden(UNIT08, case)
    want = golden["answer"]["answers"]
    majority = max(set(map(json.dumps, want)), key=[json.dumps(w) for w in want].count)
    verdict = judge(
        UNIT08,
        case,
        trace_doc(UNIT08, case),
        golden,
        child_with({"function": "meets_slo", "answers": [json.loads(majority)] * len(want)}),
    )
    assert verdict.status is Status.WRONG_ANSWER and verdict.share == 0
    assert _points(case, verdict) == 0


def test_hidden_run_files_cannot_change_public_verdicts(unit, monkeypatch):
    """Issue 31, finding 6: hidden jobs first in the list (as unit 08 lists its cases), each
    making its check loop, allocate without end or kill the judging child, and together using
    up the judging time: every public verdict is the one it gets when judged alone."""
    real = judging.judge
    public_ids = ["fcfs-unseen", "chunked-mixed"]
    hidden_ids = [
        "fcfs-mixed-relabelled",
        "chunked-mixed-relabelled",
        "fcfs-poisson-mix",
        "fcfs-ties",
    ]
    limits = JudgeLimits(case_cpu_s=0.5, total_cpu_s=1.0, memory_mb=256)
    alone = judge_cases(unit, _jobs(unit, public_ids), limits)

    def misbehaves(unit_, case, *args):
        if case.id == "fcfs-mixed-relabelled":
            while True:
                pass
        if case.id == "chunked-mixed-relabelled":
            hog = []
            while True:
                hog.append(bytearray(64 << 20))
        if case.id == "fcfs-poisson-mix":
            os._exit(3)
        return real(unit_, case, *args)

    monkeypatch.setattr(judging, "judge", misbehaves)
    jobs = _jobs(unit, hidden_ids + public_ids)
    out = judge_cases(unit, jobs, limits)
    hidden, public = out[: len(hidden_ids)], out[len(hidden_ids) :]
    assert all(j.verdict.status is Status.INVALID_SCHEDULE for j in hidden[:3])
    assert [j.verdict for j in public] == [j.verdict for j in alone]
    assert all(j.verdict.status is Status.PASSED for j in public)
