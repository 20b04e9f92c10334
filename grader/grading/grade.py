"""Grade one submission: run every graded case in the sandbox, verify, compare, score.

    grade_submission(unit, submission, cases=None, limits=None) -> GradeReport

The cases run in a fresh copy of the lab folder (``sandbox.run_cases``: one child, each case's
results back before the next case is sent, visible cases first, a policy that runs out of time
not run again), after ``sandbox.require_safe_isolation`` has refused any mode in which a child
could reach the unit's hidden material. Everything after that happens in the trusted parent
(``judge.judge``): the run file is parsed with bounded numbers and validated against the
lab's published JSON Schemas; the run must be the one asked for; ``verify.replay_run`` replays
the event log against the device rules, rebuilds every token time and recomputes the metrics;
the result is compared with the golden run (1e-6 ms).

Scoring per case: ``passed`` full points; ``wrong_schedule`` on a public case half the points
scaled by the share of requests whose token times match golden, on a hidden case half the
points when at least half of them match, else none; every other status 0. Script cases are
then judged across the set of their kind (``scoring.constant_gate``): answers that match the
reference's no more than the best constant answer does earn nothing. Feedback on a
hidden case names only the kind of failure (never ids, arrival times or token counts). A
failure of the grader's environment raises ``EnvironmentFailure``, never a score.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

from .. import labfolder
from ..cases import Case, Kind, case_trace_doc, load_grading
from ..course.golden import load_golden
from ..course.labels import hidden_labels
from ..course.points import points_table
from ..diagnosis import subject
from ..parts import unit_parts
from ..sandbox import Limits, require_safe_isolation, warm_template
from ..units import Unit, UnitError, load_unit
from .case_runs import Runner, run_all_cases, run_with
from .errors import EnvironmentFailure, GradingError, environment_errors
from .hidden import Remark
from .judge import judge
from .judging import JudgeJob, JudgeLimits, judge_cases
from .judging import warm as warm_judging
from .limits import hidden_material, limits_for
from .report import CaseResult, GradeReport, Status
from .scoring import constant_gate
from .submission import Submission, load_submission
from .verdict import Verdict

__all__ = [
    "CaseResult",
    "EnvironmentFailure",
    "GradeReport",
    "GradingError",
    "JudgeLimits",
    "Limits",
    "Status",
    "grade_submission",
    "judge",
]

WRONG_SCHEDULE_SHARE = 0.5  # most a wrong schedule can earn, times the share of right requests
HIDDEN_HALF_SHARE = 0.5  # a hidden case earns half its points from this share of right requests


def grade_submission(
    unit: Unit | str,
    submission: Path | Submission,
    *,
    cases: list[str] | None = None,
    limits: Limits | None = None,
    runner: Runner | None = None,
    jobs: int | None = None,
    judge_limits: JudgeLimits | None = None,
) -> GradeReport:
    """Grade a submission folder or zip on the unit's cases (all, or the ids in ``cases``).

    Raises ``GradingError`` only when grading cannot run; a bad submission scores 0 instead.
    ``runner`` replaces the sandboxed child (trusted staff code such as the mutant corpus may
    run in-process; ``jobs`` of its cases at once, default up to 2). However the cases ran,
    their verdicts are decided under ``judge_limits`` (``grading.judging``).
    """
    started = time.monotonic()
    unit, selected, goldens, submission = _inputs(unit, cases, submission)
    names = _labels(unit)
    limits = limits or limits_for(unit)
    if runner is None:
        with environment_errors():
            require_safe_isolation(hidden_material(unit))
        children = run_all_cases(unit, selected, submission.files, limits, goldens)
    else:
        workers = max(1, jobs) if jobs else min(2, os.cpu_count() or 1)
        if getattr(runner, "in_process", False):
            workers = 1
        children = run_with(runner, unit, selected, submission.files, limits, goldens, workers)
    jobs_ = [JudgeJob(c, case_trace_doc(unit, c), goldens[c.id], children[c.id]) for c in selected]
    judged = judge_cases(unit, jobs_, judge_limits)
    verdicts = {
        case.id: replace(j.verdict, subject=subject(unit, case))
        for case, j in zip(selected, judged, strict=True)
    }
    verdicts = constant_gate(selected, verdicts, goldens)  # script answers, judged per kind
    remarks = _keyed_remarks(selected, verdicts)
    results = [
        _case_result(
            case,
            verdicts[case.id],
            children[case.id].wall_s + j.cpu_s,
            names.get(case.id, ""),
            remarks.get(case.id, ()),
        )
        for case, j in zip(selected, judged, strict=True)
    ]
    isolation = sorted({children[c.id].isolation for c in selected} - {""}) or ["none"]
    order = [part.id for part in unit_parts(unit)]  # cases listed part by part, as the handout
    results.sort(key=lambda r: order.index(r.part) if r.part in order else len(order))
    table = points_table(unit)
    return GradeReport(
        unit=unit.id,
        cases=results,
        isolation=", ".join(isolation),
        ignored=list(submission.ignored),
        missing=list(submission.missing),
        hidden_visibility=str(unit.doc["grading"].get("hidden_visibility", "after_published")),
        seconds=time.monotonic() - started,
        part_labels={part.id: part.label for part in unit_parts(unit)},
        points_lines=table.lines(),
        notebook_points=table.notebook_points,
        unit_total=table.total,
    )


def warm(unit: Unit, cases: list[str] | None = None) -> None:
    """Make, once in a batch's parent, what grading any submission of ``unit`` reads or builds:
    the cases, golden files, trace documents and their hashes, the hidden labels, the run
    schema's checks, each case's device and the lab's case-folder template (compiled once, so
    no sandboxed child compiles the simulator). Every worker is forked from the parent and
    finds them made instead of making them again (the memos still check that no file changed).
    Raises ``GradingError`` as grading would."""
    unit, selected, _, _ = _inputs(unit, cases, Submission({}))
    _labels(unit)
    for case in selected:
        case_trace_doc(unit, case)
    warm_judging(unit, selected)
    warm_template(labfolder.built(unit))


def _inputs(unit: Unit | str, cases: list[str] | None, submission: Path | Submission):
    """(unit, selected cases, golden per case id, submission), or ``GradingError``."""
    try:
        if isinstance(unit, str):
            unit = load_unit(unit)
        grading = load_grading(unit)
        selected = [grading.by_id(c) for c in cases] if cases else list(grading.cases)
        goldens = {case.id: load_golden(unit, case) for case in selected}
    except UnitError as exc:
        raise GradingError(str(exc)) from None
    if not isinstance(submission, Submission):
        from .submission import SubmissionError

        try:
            submission = load_submission(Path(submission), unit.editable)
        except SubmissionError as exc:
            raise GradingError(str(exc)) from None
    return unit, selected, goldens, submission


def _labels(unit: Unit) -> dict[str, str]:
    """Every hidden case's stable label (over all the unit's cases, so a ``--case`` subset
    names its cases as a full grading does), or ``GradingError`` without a label key."""
    try:
        return hidden_labels(unit, [c.id for c in load_grading(unit).cases if c.hidden])
    except UnitError as exc:
        raise GradingError(str(exc)) from None


KEYED_NOTE = Remark.KEYED.value


def _keyed_remarks(selected: list[Case], verdicts: dict[str, Verdict]) -> dict[str, tuple]:
    """Metamorphic check: flag a transformed case that fails while its source case passes.

    A public case is only ever compared with a public source: its feedback may not depend on
    how a hidden case went."""

    def key(case: Case) -> tuple:
        return (case.kind, case.script, repr(case.args), case.setup_key)

    plain = {key(c): c for c in selected if c.transform is None}
    out = {}
    for case in selected:
        source = plain.get(key(case)) if case.transform is not None else None
        if source is None or (source.hidden and not case.hidden):
            continue
        passed = verdicts[source.id].status is Status.PASSED
        if passed and verdicts[case.id].status is not Status.PASSED:
            out[case.id] = (Remark.KEYED,)
    return out


def _case_result(
    case: Case, verdict: Verdict, seconds: float, label: str, remarks: tuple[Remark, ...]
) -> CaseResult:
    """A case's result; a hidden case's feedback comes from ``hidden.hidden_feedback`` only."""
    metrics = dict(verdict.metrics)
    visible = "\n".join([verdict.visible_text(), *(r.value for r in remarks)])
    if case.kind is Kind.GOODPUT and not metrics:  # no valid run: no goodput
        metrics = {"goodput": 0.0, "p99TtftMs": None}
    return CaseResult(
        id=case.id,
        part=case.part,
        points=_points(case, verdict),
        max_points=case.points,
        visibility=case.visibility,
        status=verdict.status,
        feedback=verdict.hidden_text(remarks) if case.hidden else visible,
        staff_detail=visible,
        seconds=seconds,
        metrics=metrics,
        label=label,
    )


def _points(case: Case, verdict: Verdict) -> float:
    """Full points for a pass; for a wrong schedule, on a visible case half the points times
    the share of matching requests, on a hidden case coarse credit only (half the points
    when at least half of the requests match, else none), so a hidden case's score never
    tells how many of its requests matched."""
    if verdict.status is Status.PASSED:
        return case.points
    if verdict.status is Status.BELOW_REFERENCE:  # goodput cases: the share is the score
        return round(case.points * verdict.share, 2)
    if verdict.status not in (Status.WRONG_SCHEDULE, Status.WRONG_ANSWER):
        return 0.0
    if case.hidden:
        return case.points * WRONG_SCHEDULE_SHARE if verdict.share >= HIDDEN_HALF_SHARE else 0.0
    return round(case.points * WRONG_SCHEDULE_SHARE * verdict.share, 2)
