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

import json
import os
import re
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import Enum
from functools import cache
from pathlib import Path

from . import compare, verify
from .cases import Case, Visibility, case_trace_doc, load_grading, trace_path
from .golden import case_device, load_golden
from .sandbox import CaseRun, ChildResult, Limits, run_cases, run_simulation
from .submission import Submission, load_submission
from .units import Unit, UnitError, load_unit

WRONG_SCHEDULE_SHARE = 0.5  # most a wrong schedule can earn, times the share of right requests
NOT_IMPLEMENTED = re.compile(r"is not implemented yet|NotImplementedError")
SAFE_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt))\b")


class GradingError(Exception):
    """Grading itself could not run (bad unit, missing golden files, bad submission)."""


class Status(Enum):
    PASSED = "passed"
    WRONG_SCHEDULE = "wrong_schedule"
    INVALID_SCHEDULE = "invalid_schedule"
    INCONSISTENT_STATS = "inconsistent_stats"
    CRASH = "crash"
    TIMEOUT = "timeout"
    NOT_IMPLEMENTED = "not_implemented"

    @property
    def words(self) -> str:
        return {
            Status.PASSED: "passed",
            Status.WRONG_SCHEDULE: "different schedule from the reference",
            Status.INVALID_SCHEDULE: "invalid schedule",
            Status.INCONSISTENT_STATS: "statistics inconsistent with the timeline",
            Status.CRASH: "crash",
            Status.TIMEOUT: "timeout",
            Status.NOT_IMPLEMENTED: "not implemented",
        }[self]


@dataclass
class CaseResult:
    id: str
    part: str
    points: float
    max_points: float
    visibility: Visibility
    status: Status
    feedback: str
    staff_detail: str = ""  # full detail for staff reports; never shown for hidden cases
    seconds: float = 0.0

    @property
    def hidden(self) -> bool:
        return self.visibility is Visibility.HIDDEN

    def to_json(self, staff: bool = False) -> dict:
        doc = {
            "id": self.id,
            "part": self.part,
            "points": self.points,
            "maxPoints": self.max_points,
            "visibility": self.visibility.value,
            "status": self.status.value,
            "feedback": self.feedback,
            "seconds": round(self.seconds, 3),
        }
        if staff:
            doc["staffDetail"] = self.staff_detail
        return doc


@dataclass
class GradeReport:
    unit: str
    cases: list[CaseResult]
    isolation: str
    ignored: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    hidden_visibility: str = "after_published"
    seconds: float = 0.0

    @property
    def score(self) -> float:
        return round(sum(c.points for c in self.cases), 4)

    @property
    def max_score(self) -> float:
        return round(sum(c.max_points for c in self.cases), 4)

    @property
    def parts(self) -> dict[str, tuple[float, float]]:
        out: dict[str, tuple[float, float]] = {}
        for c in self.cases:
            got, most = out.get(c.part, (0.0, 0.0))
            out[c.part] = (round(got + c.points, 4), round(most + c.max_points, 4))
        return out

    def part_note(self, part: str) -> str:
        statuses = {c.status for c in self.cases if c.part == part}
        if statuses == {Status.NOT_IMPLEMENTED}:
            return "not implemented"
        if statuses == {Status.PASSED}:
            return "all cases pass"
        return ""

    def killed_by(self) -> list[str]:
        """Ids of the hidden cases that lost points (used by the mutant report)."""
        return [c.id for c in self.cases if c.hidden and c.points < c.max_points]

    def to_json(self, staff: bool = False) -> dict:
        return {
            "unit": self.unit,
            "score": self.score,
            "maxScore": self.max_score,
            "parts": {
                name: {"score": got, "maxScore": most, "note": self.part_note(name)}
                for name, (got, most) in self.parts.items()
            },
            "isolation": self.isolation,
            "ignoredFiles": list(self.ignored),
            "missingFiles": list(self.missing),
            "seconds": round(self.seconds, 3),
            "cases": [c.to_json(staff) for c in self.cases],
        }

    def to_gradescope(self) -> dict:
        """Gradescope's results.json: top-level score, one test per case."""
        tests = []
        for c in self.cases:
            tests.append(
                {
                    "name": f"{c.part}: {c.id}" + (" (hidden)" if c.hidden else ""),
                    "score": c.points,
                    "max_score": c.max_points,
                    "status": "passed" if c.status is Status.PASSED else "failed",
                    "output": c.feedback,
                    "visibility": self.hidden_visibility if c.hidden else "visible",
                }
            )
        return {
            "score": self.score,
            "execution_time": round(self.seconds, 3),
            "output": self._summary_lines() + f"\nisolation: {self.isolation}",
            "stdout_visibility": "hidden",
            "tests": tests,
        }

    def _summary_lines(self) -> str:
        lines = [f"{self.unit}: {_pts(self.score)} / {_pts(self.max_score)} points"]
        for part, (got, most) in self.parts.items():
            note = self.part_note(part)
            lines.append(
                f"  part {part}: {_pts(got)} / {_pts(most)}" + (f" ({note})" if note else "")
            )
        if self.ignored:
            shown = ", ".join(self.ignored[:8]) + (" ..." if len(self.ignored) > 8 else "")
            lines.append(f"ignored files (only the editable files are graded): {shown}")
        if self.missing:
            lines.append(f"not in the submission (starter version used): {', '.join(self.missing)}")
        return "\n".join(lines)

    def text(self, staff: bool = False) -> str:
        lines = [self._summary_lines(), f"isolation: {self.isolation}", ""]
        for c in self.cases:
            mark = "PASS" if c.status is Status.PASSED else "FAIL"
            vis = "hidden" if c.hidden else "public"
            lines.append(
                f"[{mark}] {c.id} ({vis}, part {c.part}): {_pts(c.points)} / {_pts(c.max_points)}"
            )
            if c.status is not Status.PASSED:
                lines.extend("    " + line for line in c.feedback.splitlines())
                if staff and c.hidden and c.staff_detail:
                    lines.extend("    staff: " + line for line in c.staff_detail.splitlines())
        return "\n".join(lines)


def _pts(value: float) -> str:
    return f"{value:g}"


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
    workers = jobs or min(2, os.cpu_count() or 1)
    if getattr(run, "in_process", False):
        workers = 1

    children: dict[str, ChildResult] = {}
    if runner is None and not limits.one_child_per_case and len(selected) > 1:
        children = _run_all_cases(unit, selected, submission.files, limits)

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
            path = _write_case_trace(unit, case, trace_doc, Path(tmp) / "trace.json")
            child = runner(unit.lab_dir, files, path, case.argv(), limits)
    verdict = judge(unit, case, trace_doc, golden, child)
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
    )
    return result, child.isolation


def _write_case_trace(unit: Unit, case: Case, trace_doc: dict, path: Path) -> Path:
    """The trace file the child gets: the source bytes, or the transformed document."""
    if case.transform is None:
        path.write_bytes(trace_path(unit, case).read_bytes())
    else:
        path.write_text(json.dumps(trace_doc), encoding="utf-8")
    return path


def _run_all_cases(
    unit: Unit, selected: list[Case], files: dict[str, bytes], limits: Limits
) -> dict[str, ChildResult]:
    """Every selected case in one sandboxed child (``sandbox.run_cases``), by case id."""
    with tempfile.TemporaryDirectory(prefix="infralab-traces-") as tmp:
        runs = []
        for number, case in enumerate(selected):
            path = Path(tmp) / f"trace-{number}.json"
            _write_case_trace(unit, case, case_trace_doc(unit, case), path)
            runs.append(CaseRun(path, case.argv()))
        results = run_cases(unit.lab_dir, files, runs, limits)
    return {case.id: result for case, result in zip(selected, results, strict=True)}


@dataclass
class Verdict:
    status: Status
    summary: str  # safe for hidden cases: no ids, times or counts
    detail: str = ""  # visible cases only
    share: float = 0.0  # for WRONG_SCHEDULE: share of requests whose token times match

    def visible_text(self) -> str:
        return f"{self.status.words}: {self.summary}" + (f"\n{self.detail}" if self.detail else "")

    def hidden_text(self) -> str:
        return f"{self.status.words}: {self.summary}"


def _points(case: Case, verdict: Verdict) -> float:
    if verdict.status is Status.PASSED:
        return case.points
    if verdict.status is Status.WRONG_SCHEDULE:
        return round(case.points * WRONG_SCHEDULE_SHARE * verdict.share, 4)
    return 0.0


def judge(unit: Unit, case: Case, trace_doc: dict, golden: dict, child: ChildResult) -> Verdict:
    """Everything the trusted parent decides about one child run."""
    if child.timed_out or child.limit in ("wall time", "CPU time"):
        limit = child.limit or "wall time"
        return Verdict(Status.TIMEOUT, f"the run did not finish within the {limit} limit")
    if child.limit:  # memory, file size: stopped by the sandbox
        return Verdict(Status.CRASH, f"the run was {child.summary}")
    if child.output_error:
        return Verdict(Status.INVALID_SCHEDULE, child.summary)
    if child.returncode != 0:
        stderr = child.stderr or ""
        if NOT_IMPLEMENTED.search(stderr):
            return Verdict(
                Status.NOT_IMPLEMENTED,
                f"{case.policy}() in policies.py is not implemented yet",
            )
        return Verdict(
            Status.CRASH,
            _crash_summary(child),
            detail=_tail(stderr, 15),
        )
    if child.output is None:
        return Verdict(Status.CRASH, "simulate.py exited without writing its run file")
    try:
        document = json.loads(child.output.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError):
        return Verdict(Status.INVALID_SCHEDULE, "the run file is not valid JSON")
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
        return Verdict(
            Status.INCONSISTENT_STATS,
            f"reported {names} disagree(s) with the timeline",
            detail="\n".join(p.message for p in problems[:3]),
        )
    comparison = compare.compare_with_golden(run, replay, golden["run"])
    if comparison.same:
        return Verdict(Status.PASSED, "")
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
        "the schedule differs from the reference policy's",
        detail=detail,
        share=share,
    )


def _reject_constant(token: str):
    raise ValueError(f"{token} is not valid JSON")


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _crash_summary(child: ChildResult) -> str:
    code = child.returncode
    kind = ""
    for line in reversed((child.stderr or "").strip().splitlines()):
        match = SAFE_ERROR.match(line.strip())
        if match:
            kind = match.group(1)
            break
        if "simulate.py: error:" in line:
            kind = "the engine rejected a batch"
            break
    return f"the run stopped with an error (exit code {code}{', ' + kind if kind else ''})"


def _run_identity(unit: Unit, case: Case, document: dict, trace_doc: dict) -> str | None:
    """Why the run file is not the run this case asked for (None when it is)."""
    runs = document["runs"]
    if len(runs) != 1:
        return f"the run file holds {len(runs)} runs, expected exactly one"
    run = runs[0]
    if run["policy"] != case.policy or run["params"] != case.params:
        return "the run file is for another policy or other parameters"
    if run["fault"] is not None:
        return "the run file was made with a fault switch on"
    if run["device"] != case_device(unit, case).to_json():
        return "the run file's device profile is not the case's"
    if document["trace"] != trace_doc:
        return "the run file's trace is not the case's trace"
    return None


@cache
def _validator(schema_dir: str):
    import jsonschema
    from referencing import Registry, Resource

    folder = Path(schema_dir)
    run_schema = json.loads((folder / "run.schema.json").read_text(encoding="utf-8"))
    trace_schema = json.loads((folder / "trace.schema.json").read_text(encoding="utf-8"))
    registry = Registry().with_resources(
        [
            (run_schema["$id"], Resource.from_contents(run_schema)),
            (trace_schema["$id"], Resource.from_contents(trace_schema)),
            ("trace.schema.json", Resource.from_contents(trace_schema)),
        ]
    )
    return jsonschema.Draft202012Validator(run_schema, registry=registry)


def validate_run_file(unit: Unit, document) -> str | None:
    """The first JSON Schema error of a run file as ``path: message`` (None when valid).

    The path keeps field names and drops list positions, so it is safe for hidden cases.
    """
    validator = _validator(str(unit.lab_dir / "schemas"))
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(document))
    if error is None:
        return None
    path = "/".join(str(p) for p in error.absolute_path if not isinstance(p, int)) or "top level"
    return f"at {path}: {error.validator} check failed"
