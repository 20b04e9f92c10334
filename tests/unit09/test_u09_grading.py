"""Unit 09's hidden-trace grading: reference full marks, stubs 0, every mutant killed by a hidden
case of its part, and prefix_admit is the policy the vLLM comparison runs (benchmarks/
prefix_vs_vllm.py's ``paged_prefix``, checked there against vLLM's own scheduler)."""

from __future__ import annotations

import importlib.util

import pytest
import tailtools
from servesim import DeviceProfile, read_trace_file, simulate

from grader import reference
from grader.cases import load_grading
from grader.grading.grade import Status, grade_submission
from grader.grading.inprocess import run_in_process
from grader.traces.mutants import list_mutants
from grader.units import REPO_ROOT, load_unit

UNIT = load_unit("unit09")
GRADING = load_grading(UNIT)

# mutant -> (the part whose hidden cases must catch it, the failure kinds it may get there)
EXPECTED = {
    "cancel_memo_queue": ("cancel", {Status.CRASH}),
    "cancel_double_free": ("cancel", {Status.CRASH, Status.WRONG_SCHEDULE}),
    "prefix_ignores_hit": ("prefix", {Status.WRONG_SCHEDULE}),
    "prefix_hit_before_step": ("prefix", {Status.WRONG_SCHEDULE}),
    "admit_ignores_free_hits": ("admit", {Status.CRASH}),
    "admit_overtakes": ("admit", {Status.WRONG_SCHEDULE}),
    "admit_whole_prompt": ("admit", {Status.WRONG_SCHEDULE}),
    "stream_decodes_paused": ("stream", {Status.CRASH}),
    "stream_never_resumes": ("stream", {Status.CRASH}),
    "stream_preempts_instead_of_waiting": ("stream", {Status.CRASH}),
    "stream_preempts_paused": ("stream", {Status.WRONG_SCHEDULE}),
    **{
        f"measure/{p.stem}": ("measure", {Status.WRONG_ANSWER})
        for p in sorted((REPO_ROOT / "labs/unit09/mutants/measure").glob("*.py"))
    },
}
STREAM_FIELDS = {
    "streamBufferBytes",
    "streamEventBytes",
    "streamLowMarkBytes",
    "streamPauseDeadlineMs",
}
STEP_FIELDS = {"prefillMsPerToken", "decodeBatchMs", "decodeMsPerSeq"}


def case_ids(part: str) -> list[str]:
    return [c.id for c in GRADING.cases if c.part == part]


def test_reference_gets_full_marks_and_stubs_zero():
    report = grade_submission(UNIT, UNIT.solutions_dir, runner=run_in_process)
    assert report.score == report.max_score > 0
    assert [c.id for c in report.cases if c.status is not Status.PASSED] == []
    stubs = grade_submission(UNIT, UNIT.lab_dir, runner=run_in_process)
    assert stubs.score == 0
    assert {c.status for c in stubs.cases} == {Status.NOT_IMPLEMENTED}


def test_every_part_has_hidden_cases_and_a_metamorphic_copy():
    for part in ("cancel", "prefix", "admit", "stream", "measure"):
        assert len([c for c in GRADING.cases if c.part == part and c.hidden]) >= 4, part
    relabelled = {c.part for c in GRADING.cases if c.transform is not None}
    assert relabelled >= {"cancel", "admit", "stream"}
    overrides = {key for c in GRADING.cases for key in c.device}
    assert overrides == {"maxActive", "kvPages"} | STREAM_FIELDS | STEP_FIELDS
    # every backpressure case streams; the step costs change only for the tail cases of
    # measure.py (labs/unit09/tailcases.py's device), whose runs the reference makes
    for case in GRADING.cases:
        if case.policy == "backpressure" and case.part == "stream":
            assert set(case.device) >= STREAM_FIELDS, case.id
        if STEP_FIELDS & set(case.device):
            assert case.part == "measure" and case.kind.value == "script", case.id


def test_diagnose_cases_are_the_constructed_tail_cases():
    """Each diagnose() case on a tail trace runs a case of labs/unit09/tailcases.py on its
    device: the trace is the generator's, and the device the case builds is the generator's
    (every kind has one; the others diagnose too few requests)."""
    cases = [
        c
        for c in GRADING.cases
        if c.args.get("function") == "diagnose" and c.trace.startswith("tail-")
    ]
    assert {c.trace.removeprefix("tail-") for c in cases} == set(tailtools.tailcases.KINDS)
    for case in cases:
        kind = case.trace.removeprefix("tail-")
        made = tailtools.tailcases.make_case(kind, 909)
        hidden = read_trace_file(UNIT.traces_dir / "hidden" / f"{case.trace}.json")
        assert [r.id for r in hidden.requests] == [r["id"] for r in made.trace["requests"]]
        want = {k: v for k, v in made.device.items() if UNIT.device.get(k) != v}
        assert {k: case.device[k] for k in want} == want, case.id
        assert case.params == {"budget": made.budget}, case.id


def test_corpus_covers_every_part_and_each_mutant_says_what_is_wrong():
    mutants = {m.name: m for m in list_mutants(UNIT)}
    assert set(mutants) == set(EXPECTED)
    assert all(m.summary for m in mutants.values())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_mutant_loses_points_on_a_hidden_case_of_its_part(name):
    mutant = next(m for m in list_mutants(UNIT) if m.name == name)
    part, kinds = EXPECTED[name]
    report = grade_submission(
        UNIT, mutant.submission(UNIT), cases=case_ids(part), runner=run_in_process
    )
    killers = report.killed_by()
    assert killers, f"{name} survives every hidden case of part {part}"
    assert {c.status for c in report.cases if c.id in killers} <= kinds


def test_prefix_admit_is_the_policy_compared_with_vllm():
    path = REPO_ROOT / "benchmarks" / "prefix_vs_vllm.py"
    spec = importlib.util.spec_from_file_location("_u09_prefix_vs_vllm", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    policies = reference.solution_policies(UNIT)
    base = dict(UNIT.device)
    for case in (c for c in GRADING.cases if c.policy == "prefix_admit" and c.transform is None):
        trace = read_trace_file(UNIT.traces_dir / "hidden" / f"{case.trace}.json") if case.hidden \
            else read_trace_file(UNIT.lab_dir / "traces" / f"{case.trace}.json")  # fmt: skip
        device = DeviceProfile.from_json({**base, **case.device}, source=case.id)
        budget = case.params["budget"] if case.params else 128

        def times(policy, trace=trace, device=device, budget=budget):
            run = simulate(trace, lambda view: policy(view, budget), device, budget=budget)
            return [(s.id, tuple(s.token_times_ms), s.status) for s in run.sequences]

        assert times(policies.prefix_admit) == times(bench.paged_prefix), case.id


RELABELLED = """

_Ratio = Ratio


def Ratio(num, den, what):  # every label in other words: the numbers stay the reference's
    return _Ratio(num, den, "relabelled, " + what[::-1])
"""


def test_numbers_equal_to_the_reference_earn_full_marks_whatever_the_labels_say():
    """Issue 47: points are for the numbers a part asks for; a Ratio's label is not graded."""
    from grader.grading.submission import Submission

    files = {name: (UNIT.solutions_dir / name).read_bytes() for name in UNIT.editable}
    files["measure.py"] += RELABELLED.encode()
    ids = [c.id for c in GRADING.cases if c.args.get("function") in LABELLED]
    assert len({GRADING.by_id(i).args["function"] for i in ids}) == len(LABELLED)
    report = grade_submission(UNIT, Submission(files), cases=ids, runner=run_in_process)
    assert report.score == report.max_score > 0, report.text(staff=True)


LABELLED = ("prefill_amplification", "waiting_share", "slow_clients", "evidence")


def test_a_wrong_count_is_named_by_its_function_and_field():
    from grader.grading.submission import Submission

    files = {name: (UNIT.solutions_dir / name).read_bytes() for name in UNIT.editable}
    files["measure.py"] += RELABELLED.replace("_Ratio(num, den", "_Ratio(num + 1, den").encode()
    report = grade_submission(
        UNIT, Submission(files), cases=["measure-evidence-overload-waiting"], runner=run_in_process
    )
    (case,) = report.cases
    assert case.points == 0
    assert case.feedback == (
        "different answer from the reference: waiting_share() in measure.py: "
        "the answer's num differs from the reference's"
    )
