"""Remembered verdicts (grader.grading.verdict_memo): a run file is judged once per batch only
when it is byte for byte the reference's, and every such verdict is the one judging gives."""

from __future__ import annotations

from dataclasses import replace

import pytest

from grader.cases import case_trace_doc, load_grading
from grader.course.golden import load_golden
from grader.grading import judging, reference_memo, verdict_memo
from grader.grading.case_runs import graded_argv
from grader.grading.hidden import Note
from grader.grading.inprocess import run_in_process
from grader.grading.judging import JudgeJob, judge_cases
from grader.grading.report import Status
from grader.grading.submission import Submission
from grader.labfolder import built
from grader.sandbox import run_cases
from grader.sandbox.multicase import CaseRun

CASES = ["fcfs-mixed", "chunked-unseen-chunk4"]  # a public and a hidden case of unit 07


def _reference_jobs(unit) -> list[JudgeJob]:
    """Jobs for the reference's run of ``CASES`` (made in this process)."""
    return reference_memo.reference_jobs(unit, CASES)


class CountedChildren:
    """``judging._one_child`` that counts the jobs it is given to judge."""

    def __init__(self, monkeypatch):
        self.judged: list[str] = []
        real = judging._one_child

        def counted(unit, jobs, limits, left_s):
            self.judged += [job.case.id for job in jobs]
            return real(unit, jobs, limits, left_s)

        monkeypatch.setattr(judging, "_one_child", counted)


def test_the_reference_bytes_get_the_verdict_judging_gives_without_a_judging_child(
    unit, monkeypatch
):
    jobs = _reference_jobs(unit)
    judged = judge_cases(unit, jobs)  # outside ``remembered``: judged as always
    assert [j.verdict.status for j in judged] == [Status.PASSED, Status.PASSED]
    children = CountedChildren(monkeypatch)
    with reference_memo.remembered(unit, CASES):
        children.judged.clear()  # the reference's own judging, made by ``remembered``
        jobs = _reference_jobs(unit)
        again = judge_cases(unit, jobs)
        assert children.judged == []
        charged = [verdict_memo.lookup(unit, job)[1] for job in jobs]
    assert [j.verdict for j in again] == [j.verdict for j in judged]
    assert [j.cpu_s for j in again] == charged  # what judging took, as before


def test_a_sandboxed_childs_run_file_is_the_in_process_ones(unit):
    """The memo's premise: the reference in the sandbox writes the bytes it writes in-process."""
    grading = load_grading(unit)
    case = grading.by_id(CASES[0])
    files = {name: (unit.solutions_dir / name).read_bytes() for name in unit.editable}
    job = _reference_jobs(unit)[0]
    from grader.cases import trace_path

    run = CaseRun(trace_path(unit, case), graded_argv(case))
    sandboxed = run_cases(built(unit), files, [run])[0]
    assert sandboxed.returncode == 0
    assert sandboxed.output == job.child.output


def test_one_byte_more_is_judged_again(unit, monkeypatch):
    children = CountedChildren(monkeypatch)
    with reference_memo.remembered(unit, CASES):
        children.judged.clear()
        jobs = _reference_jobs(unit)
        spaced = replace(jobs[0].child, output=jobs[0].child.output + b" ")
        out = judge_cases(unit, [replace(jobs[0], child=spaced), jobs[1]])
    assert children.judged == [CASES[0]]
    assert out[0].verdict.status is Status.PASSED  # the same JSON, judged in full


@pytest.mark.parametrize(
    "ending",
    [{"returncode": 1}, {"limit": "memory"}, {"timed_out": True}, {"skipped": "why"}],
    ids=["exit-1", "limit", "timed-out", "skipped"],
)
def test_the_same_bytes_after_another_ending_are_not_remembered(unit, ending):
    with reference_memo.remembered(unit, CASES):
        job = _reference_jobs(unit)[0]
        assert verdict_memo.lookup(unit, job) is not None
        other = replace(job, child=replace(job.child, **ending))
        assert verdict_memo.lookup(unit, other) is None


def test_another_golden_document_is_not_the_remembered_one(unit):
    with reference_memo.remembered(unit, CASES):
        job = _reference_jobs(unit)[0]
        assert verdict_memo.lookup(unit, job) is not None
        other = replace(job, golden=dict(job.golden))  # equal, but not the document judged
        assert verdict_memo.lookup(unit, other) is None


def test_nothing_is_remembered_outside_a_batch_or_from_a_judging_ceiling(unit):
    job = _reference_jobs(unit)[0]
    assert verdict_memo.lookup(unit, job) is None
    with reference_memo.remembered(unit, CASES):
        assert verdict_memo.lookup(unit, job) is not None
    assert verdict_memo.lookup(unit, job) is None  # forgotten after the block
    ceiling = judging.Verdict(Status.INVALID_SCHEDULE, Note.CHECK_TIME)
    verdict_memo.remember(unit, job, ceiling, 1.0)
    try:
        assert verdict_memo.lookup(unit, job) is None
    finally:
        verdict_memo._MEMO.clear()


def test_remembered_verdicts_are_charged_their_judging_time(unit):
    """A remembered verdict is charged the CPU time judging it took: once a submission's
    judging time is used up, the cases after it are 'not checked' as they would be."""
    with reference_memo.remembered(unit, CASES):
        job = _reference_jobs(unit)[0]
        verdict, _ = verdict_memo.lookup(unit, job)
        verdict_memo.remember(unit, job, verdict, 1.0)  # as if judging it had taken 1 s
        tight = judging.JudgeLimits(total_cpu_s=1.0 + judging.MIN_SLICE_S / 2)
        out = judge_cases(unit, [job, job], tight)
    assert out[0].verdict.status is Status.PASSED
    assert out[1].verdict.summary == judging.NOT_CHECKED


def test_in_process_runs_of_a_mutant_match_the_reference_where_it_agrees(unit):
    """Why the mutant matrix gains: a mutant's run of a case it does not change is the
    reference's run file, byte for byte."""
    grading = load_grading(unit)
    case = grading.by_id(CASES[0])
    mutant = next(p for p in sorted(unit.mutants_dir.glob("*.py")) if "chunk" in p.stem)
    files = {"policies.py": mutant.read_bytes()}
    from grader.cases import trace_path

    job = _reference_jobs(unit)[0]
    child = run_in_process(built(unit), files, trace_path(unit, case), graded_argv(case))
    assert child.output == job.child.output  # an fcfs case: a chunked mutant agrees
    assert load_golden(unit, case) is job.golden
    assert case_trace_doc(unit, case) is job.trace_doc
    assert Submission(files).files == files
