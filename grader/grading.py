"""Grade one submission: run every graded case in a child process, verify, compare, score.

    grade_submission(unit, submission, cases=None, limits=None) -> GradeReport

Per case the student's editable files run in a fresh copy of the lab folder (see
``sandbox.run_simulation``); everything after that happens here, in the trusted parent:

1. the run file is parsed and validated against the lab's published JSON Schemas;
2. the run must be the one asked for (policy, params, device, trace, no fault switch);
3. ``verify.replay_run`` replays the event log against the device rules, rebuilds every token
   time and recomputes the metrics, flagging reported statistics that disagree;
4. the schedule, token times and metrics are compared with the golden run (1e-6 ms).

Scoring per case: ``passed`` full points; ``wrong_schedule`` half the points scaled by the share
of requests whose token times match golden; every other status 0. Feedback on a hidden case
names only the kind of failure (never ids, arrival times or token counts).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import casekinds, verify
from .cases import Case, Kind, case_trace_doc, load_grading, trace_path
from .course.golden import case_device, load_golden
from .report import CaseResult, GradeReport, Status
from .sandbox import CaseRun, ChildResult, Limits, SandboxError, run_cases, run_simulation
from .submission import Submission, load_submission
from .units import Unit, UnitError, load_unit
from .verify import compare
from .verify.runschema import validate_run_file

__all__ = [
    "CaseResult",
    "GradeReport",
    "GradingError",
    "Limits",
    "Status",
    "grade_case",
    "grade_submission",
    "judge",
]

WRONG_SCHEDULE_SHARE = 0.5  # most a wrong schedule can earn, times the share of right requests
NOT_IMPLEMENTED = re.compile(r"is not implemented yet|NotImplementedError")


class GradingError(Exception):
    """Grading itself could not run (bad unit, missing golden files, bad submission)."""


Runner = Callable[[Path, dict, Path, list, Limits], ChildResult]


def grade_submission(
    unit: Unit | str,
    submission: Path | Submission,
    *,
    cases: list[str] | None = None,
    limits: Limits | None = None,
    runner: Runner | None = None,
    jobs: int | None = None,
) -> GradeReport:
    """Grade a submission folder or zip on the unit's cases (all, or the ids in ``cases``).

    Raises ``GradingError`` only when grading cannot run; a bad submission scores 0 instead.
    ``runner`` replaces the sandboxed child (trusted staff code such as the mutant corpus may
    run in-process); ``jobs`` is how many cases run at once (default: up to 2).
    """
    started = time.monotonic()
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
    run = runner or run_simulation
    limits = limits or Limits(wall_s=grading.timeout_s)
    workers = max(1, jobs) if jobs else min(2, os.cpu_count() or 1)
    if getattr(run, "in_process", False):
        workers = 1

    children: dict[str, ChildResult] = {}
    if runner is None and not limits.one_child_per_case and len(selected) > 1:
        children = _run_all_cases(unit, selected, submission.files, limits, goldens)

    def one(case: Case) -> tuple[CaseResult, str]:
        return grade_case(
            unit,
            case,
            files=submission.files,
            golden=goldens[case.id],
            runner=run,
            limits=limits,
            child=children.get(case.id),
        )

    if workers > 1 and len(selected) > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            outcomes = list(pool.map(one, selected))
    else:
        outcomes = [one(case) for case in selected]
    _note_keyed_answers(selected, [result for result, _ in outcomes])
    isolation = sorted({iso for _, iso in outcomes if iso}) or ["none"]
    return GradeReport(
        unit=unit.id,
        cases=[result for result, _ in outcomes],
        isolation=", ".join(isolation),
        ignored=list(submission.ignored),
        missing=list(submission.missing),
        hidden_visibility=str(unit.doc["grading"].get("hidden_visibility", "after_published")),
        seconds=time.monotonic() - started,
    )


KEYED_NOTE = (
    "the same policy passes on the trace this case was derived from (only request ids and "
    "arrival times differ), so the policy seems to depend on ids or absolute times"
)


def _note_keyed_answers(selected: list[Case], results: list[CaseResult]) -> None:
    """Metamorphic check: flag a transformed case that fails while its source case passes."""
    by_id = {r.id: r for r in results}

    def key(case: Case) -> tuple:
        return (case.kind, case.script, repr(case.args), case.setup_key)

    plain = {key(c): by_id[c.id] for c in selected if c.transform is None}
    for case in selected:
        source = plain.get(key(case)) if case.transform is not None else None
        result = by_id[case.id]
        if source and source.status is Status.PASSED and result.status is not Status.PASSED:
            result.feedback += f"\n{KEYED_NOTE}"
            result.staff_detail += f"\n{KEYED_NOTE}"


def grade_case(
    unit: Unit,
    case: Case,
    *,
    files: dict[str, bytes],
    golden: dict,
    runner: Runner,
    limits: Limits,
    child: ChildResult | None = None,
) -> tuple[CaseResult, str]:
    """Run and judge one case; returns its result and the isolation mode of the child.

    ``child``: the case already ran (all cases of a submission in one sandboxed child).
    """
    started = time.monotonic()
    trace_doc = case_trace_doc(unit, case)
    if child is None:
        with tempfile.TemporaryDirectory(prefix="infralab-trace-") as tmp:
            path = _write_case_input(unit, case, golden, Path(tmp) / "trace.json")
            extra = {"script": case.script} if case.kind is Kind.SCRIPT else {}
            with _child_start_errors(f"case '{case.id}': "):
                child = runner(unit.lab_dir, files, path, _case_argv(case), limits, **extra)
    verdict = judge(unit, case, trace_doc, golden, child)
    if case.kind is Kind.GOODPUT and not verdict.metrics:  # no valid run: no goodput
        verdict.metrics = {"goodput": 0.0, "p99TtftMs": None}
    points = _points(case, verdict)
    result = CaseResult(
        id=case.id,
        part=case.part,
        points=points,
        max_points=case.points,
        visibility=case.visibility,
        status=verdict.status,
        feedback=verdict.hidden_text() if case.hidden else verdict.visible_text(),
        staff_detail=verdict.visible_text(),
        seconds=time.monotonic() - started,
        metrics=verdict.metrics,
    )
    return result, child.isolation


def _case_argv(case: Case) -> list[str]:
    return [] if case.kind is Kind.SCRIPT else case.argv()


def _write_case_input(unit: Unit, case: Case, golden: dict, path: Path) -> Path:
    """The file the child gets: the case's trace, or a script case's check file."""
    if case.kind is Kind.SCRIPT:
        path.write_text(json.dumps({"run": golden["run"], "args": case.args}), encoding="utf-8")
        return path
    return _write_case_trace(unit, case, case_trace_doc(unit, case), path)


def _write_case_trace(unit: Unit, case: Case, trace_doc: dict, path: Path) -> Path:
    """The trace file the child gets: the source bytes, or the transformed document."""
    if case.transform is None:
        path.write_bytes(trace_path(unit, case).read_bytes())
    else:
        path.write_text(json.dumps(trace_doc), encoding="utf-8")
    return path


def _run_all_cases(
    unit: Unit, selected: list[Case], files: dict[str, bytes], limits: Limits, goldens: dict
) -> dict[str, ChildResult]:
    """Every selected case from one sandboxed child (``sandbox.run_cases``), by case id.

    Visible cases go first: a case never sees a later case's trace, so no hidden trace can
    reach a case whose output the student is shown.
    """
    selected = sorted(selected, key=lambda case: case.hidden)
    with tempfile.TemporaryDirectory(prefix="infralab-traces-") as tmp:
        runs = []
        for number, case in enumerate(selected):
            path = Path(tmp) / f"trace-{number}.json"
            _write_case_input(unit, case, goldens[case.id], path)
            script = case.script if case.kind is Kind.SCRIPT else "simulate.py"
            runs.append(CaseRun(path, _case_argv(case), script))
        with _child_start_errors():
            results = run_cases(unit.lab_dir, files, runs, limits)
    return {case.id: result for case, result in zip(selected, results, strict=True)}


@contextlib.contextmanager
def _child_start_errors(where: str = "") -> Iterator[None]:
    """A sandbox that cannot start the child is a ``GradingError`` (not the submission's)."""
    try:
        yield
    except (OSError, subprocess.SubprocessError, SandboxError) as exc:
        raise GradingError(f"{where}could not start the child run ({exc})") from exc


@dataclass
class Verdict:
    status: Status
    summary: str  # safe for hidden cases: no ids, times or counts
    detail: str = ""  # visible cases only
    share: float = 0.0  # WRONG_SCHEDULE / WRONG_ANSWER / BELOW_REFERENCE: what matched
    metrics: dict = field(default_factory=dict)  # goodput cases: for the leaderboard

    def visible_text(self) -> str:
        return self.hidden_text() + (f"\n{self.detail}" if self.detail else "")

    def hidden_text(self) -> str:
        return f"{self.status.words}: {self.summary}" if self.summary else self.status.words


def _points(case: Case, verdict: Verdict) -> float:
    if verdict.status is Status.PASSED:
        return case.points
    if verdict.status in (Status.WRONG_SCHEDULE, Status.WRONG_ANSWER):
        return round(case.points * WRONG_SCHEDULE_SHARE * verdict.share, 2)
    if verdict.status is Status.BELOW_REFERENCE:
        return round(case.points * verdict.share, 2)
    return 0.0


def judge(unit: Unit, case: Case, trace_doc: dict, golden: dict, child: ChildResult) -> Verdict:
    """Everything the trusted parent decides about one child run."""
    if child.out_of_time:
        limit = child.limit or "wall time"
        return Verdict(Status.TIMEOUT, f"the run did not finish within the {limit} limit")
    if child.limit:  # memory, file size: stopped by the sandbox
        return Verdict(Status.CRASH, f"the run was {child.summary}")
    if child.output_error:
        return Verdict(Status.INVALID_SCHEDULE, child.summary)
    if child.returncode != 0:
        stderr = child.stderr or ""
        if NOT_IMPLEMENTED.search(stderr):
            what = f"{case.policy}() in policies.py"
            if case.kind is Kind.SCRIPT:
                what = f"a function {case.script} calls"
            return Verdict(Status.NOT_IMPLEMENTED, f"{what} is not implemented yet")
        return Verdict(
            Status.CRASH,
            _crash_summary(child),
            detail=f"exit code {child.returncode}\n{student_traceback(stderr)}",
        )
    if child.output is None:
        if case.kind is Kind.SCRIPT:
            return Verdict(Status.CRASH, f"{case.script} exited without writing its answers")
        return Verdict(Status.CRASH, "simulate.py exited without writing its run file")
    try:
        document = json.loads(child.output.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return Verdict(Status.INVALID_SCHEDULE, "the run file is not valid JSON")
    if case.kind is Kind.SCRIPT:
        return _judge_answers(golden, document)
    schema_error = validate_run_file(unit, document)
    if schema_error:
        return Verdict(
            Status.INVALID_SCHEDULE, f"the run file does not match the schema ({schema_error})"
        )
    mismatch = _run_identity(unit, case, document, trace_doc)
    if mismatch:
        return Verdict(Status.INVALID_SCHEDULE, mismatch)
    run = document["runs"][0]
    device = golden["device"]
    problems, replay = verify.replay_run(run, trace_doc, device, unit=unit)
    invalid = [p for p in problems if p.kind is verify.ProblemKind.INVALID_SCHEDULE]
    if invalid:
        return Verdict(
            Status.INVALID_SCHEDULE,
            invalid[0].safe_text(),
            detail="\n".join(p.message for p in invalid[:3]),
        )
    if problems:
        names = ", ".join(dict.fromkeys(p.statistic for p in problems))
        detail = "\n".join(p.message for p in problems[:3])
        if run["fault"]:
            detail += f"\n(the run file says fault switch {run['fault']} was on)"
        return Verdict(
            Status.INCONSISTENT_STATS,
            f"reported {names} disagree(s) with the timeline",
            detail=detail,
        )
    if run["fault"]:
        return Verdict(Status.INVALID_SCHEDULE, "the run file was made with a fault switch on")
    if case.kind is Kind.GOODPUT:
        return _judge_goodput(case, run, golden)
    comparison = compare.compare_with_golden(run, replay, golden["run"])
    if comparison.same:
        return Verdict(Status.PASSED, "")  # feedback: "passed"
    share = comparison.matching_requests / comparison.total_requests
    detail = ""
    if comparison.divergence is not None:
        order = {r["id"]: n for n, r in enumerate(golden["run"]["requests"])}
        div = comparison.divergence
        detail = (
            f"first divergence: {div.text()}\n"
            f"{compare.side_by_side(golden['run']['events'], run['events'], order, div.index)}"
        )
    elif comparison.metric_mismatch:
        detail = f"recomputed {comparison.metric_mismatch} differs from the reference"
    return Verdict(
        Status.WRONG_SCHEDULE,
        "",
        detail=detail,
        share=share,
    )


def _judge_answers(golden: dict, document) -> Verdict:
    """A script case: the child's answers against the reference's (``golden["answer"]``)."""
    want = golden["answer"]["answers"]
    got = document.get("answers") if isinstance(document, dict) else None
    if casekinds.same_value(got, want):
        return Verdict(Status.PASSED, "")
    share = casekinds.answer_share(got, want)
    return Verdict(
        Status.WRONG_ANSWER,
        "",
        detail=f"{round(share * 100)} % of the answers equal the reference's",
        share=share,
    )


def _judge_goodput(case: Case, run: dict, golden: dict) -> Verdict:
    """A goodput case: a valid run scored by its goodput relative to the reference's."""
    mine = casekinds.goodput_score(run, case.slo)
    ref = casekinds.goodput_score(golden["run"], case.slo)
    share = casekinds.goodput_share(mine, ref)
    metrics = {"goodput": mine.goodput_per_s, "p99TtftMs": mine.p99_ttft_ms}
    detail = (
        f"goodput {mine.goodput_per_s:.4g} req/s vs reference {ref.goodput_per_s:.4g} req/s "
        f"({mine.qualifying} vs {ref.qualifying} qualifying requests)"
    )
    status = Status.PASSED if share >= casekinds.CAP else Status.BELOW_REFERENCE
    return Verdict(status, "", detail=detail, share=share, metrics=metrics)


def _reject_constant(token: str):
    raise ValueError(f"{token} is not valid JSON")


_LAB_PATH = re.compile(r'File "[^"]*?/([^/"]+\.py)"')


def student_traceback(stderr: str, limit: int = 20) -> str:
    """The part of a child's stderr a student needs: their own frames and the error line.

    Temp-folder paths are shortened to the file name; frames inside the engine before the
    first frame of an editable file are dropped.
    """
    lines = _LAB_PATH.sub(r'File "\1"', stderr.strip()).splitlines()
    starts = [n for n, line in enumerate(lines) if line.startswith("Traceback")]
    if not starts:
        return "\n".join(lines[-limit:])
    block = lines[starts[-1] :]
    own = next((n for n, line in enumerate(block) if 'File "policies.py"' in line), 1)
    kept = [block[0], *block[max(own, 1) :]]
    return "\n".join(kept[-limit:])


def _crash_summary(child: ChildResult) -> str:
    """What stopped the child, in words safe for hidden cases.

    Deliberately coarse: the exception's type or message would be a channel through which a
    submission could smuggle details of a hidden trace out. Visible cases add the traceback.
    """
    if "simulate.py: error:" in (child.stderr or ""):
        return "the engine rejected a batch the policy returned"
    return "an exception was raised in the run"


def _run_identity(unit: Unit, case: Case, document: dict, trace_doc: dict) -> str | None:
    """Why the run file is not the run this case asked for (None when it is)."""
    runs = document["runs"]
    if len(runs) != 1:
        return f"the run file holds {len(runs)} runs, expected exactly one"
    run = runs[0]
    if run["policy"] != case.policy or run["params"] != case.params:
        return "the run file is for another policy or other parameters"
    if run["device"] != case_device(unit, case).to_json():
        return "the run file's device profile is not the case's"
    if document["trace"] != trace_doc:
        return "the run file's trace is not the case's trace"
    return None
