"""The result of grading one submission: per-case statuses, points, feedback and formats.

``GradeReport`` renders as text (``text()``), as the project's JSON (``to_json()``) and as
Gradescope's ``results.json`` (``to_gradescope()``).

Student views (``text()``, ``to_json()`` and ``to_gradescope()`` without ``staff``) never name
a hidden case: it shows as its stable label ``hidden-<hex>`` (``grader.course.labels``: a keyed
hash of its id, so labels never move when cases are added), with its part, coarse points and
feedback that names the function and the kind of mistake only. Real ids (next to their labels)
and staff detail appear only with ``staff``.
Gradescope's top-level ``output`` covers the public cases alone (see ``docs/grading.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ..cases import Visibility
from ..sandbox.output import printable
from .leaderboard import entries as leaderboard_entries

WHEN_SHOWN = {  # Gradescope visibility of hidden tests -> when a student sees them
    "after_published": "when grades are published",
    "after_due_date": "after the due date",
    "hidden": "are not shown",
    "visible": "below",
}


class Status(Enum):
    PASSED = "passed"
    WRONG_SCHEDULE = "wrong_schedule"
    INVALID_SCHEDULE = "invalid_schedule"
    INCONSISTENT_STATS = "inconsistent_stats"
    CRASH = "crash"
    TIMEOUT = "timeout"
    NOT_IMPLEMENTED = "not_implemented"
    WRONG_ANSWER = "wrong_answer"  # script cases: answers differ from the reference's
    BELOW_REFERENCE = "below_reference"  # goodput cases: valid, less goodput than the reference

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
            Status.WRONG_ANSWER: "different answer from the reference",
            Status.BELOW_REFERENCE: "valid schedule, less goodput than the reference",
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
    metrics: dict = field(default_factory=dict)  # goodput cases: goodput, p99TtftMs
    label: str = ""  # hidden cases: the stable name student views use (grader.course.labels)

    @property
    def hidden(self) -> bool:
        return self.visibility is Visibility.HIDDEN

    def to_json(self, staff: bool = False, name: str | None = None) -> dict:
        """The case as JSON; ``name`` replaces the id in student views of hidden cases."""
        doc = {
            "id": self.id if staff or name is None else name,
            "part": self.part,
            "points": self.points,
            "maxPoints": self.max_points,
            "visibility": self.visibility.value,
            "status": self.status.value,
            "feedback": self.feedback,
        }
        if staff or not self.hidden:  # a hidden case's time could carry its trace's size out
            doc["seconds"] = round(self.seconds, 3)
        if staff:
            doc["staffDetail"] = self.staff_detail
            if self.metrics:
                doc["metrics"] = dict(self.metrics)
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
    part_labels: dict[str, str] = field(default_factory=dict)  # part id -> "part 2 (budgets)"
    points_lines: list[str] = field(default_factory=list)  # the unit's points table, in words
    notebook_points: float = 0.0  # the unit's notebook, scored in nbgrader, not here
    unit_total: float = 0.0  # the handout's total: every case and the notebook

    @property
    def score(self) -> float:
        return round(sum(c.points for c in self.cases), 4)

    @property
    def max_score(self) -> float:
        return round(sum(c.max_points for c in self.cases), 4)

    @property
    def parts(self) -> dict[str, tuple[float, float]]:
        """(points, most points) per part, in the handout's order of parts."""
        out: dict[str, tuple[float, float]] = {}
        for c in self.cases:
            got, most = out.get(c.part, (0.0, 0.0))
            out[c.part] = (round(got + c.points, 4), round(most + c.max_points, 4))
        order = list(self.part_labels)
        return dict(sorted(out.items(), key=lambda kv: _rank(order, kv[0])))

    def part_label(self, part: str) -> str:
        """How reports name a part: ``part 2 (budgets)`` (the handout's number), else its id."""
        return self.part_labels.get(part, f"part {part}")

    def part_note(self, part: str) -> str:
        statuses = {c.status for c in self.cases if c.part == part}
        if statuses == {Status.NOT_IMPLEMENTED}:
            return "not implemented"
        if statuses == {Status.PASSED}:
            return "all cases pass"
        return ""

    def names(self, staff: bool = False) -> list[str]:
        """The name each case goes by: its id, or its stable label ``hidden-<hex>`` for a hidden
        case in a student view (staff views show both)."""
        out = []
        for c in self.cases:
            if c.hidden and not staff:
                out.append(c.label or "hidden")
            elif c.hidden and c.label:
                out.append(f"{c.id} [{c.label}]")
            else:
                out.append(c.id)
        return out

    def public_score(self) -> tuple[float, float]:
        """(points, most points) of the public cases alone."""
        public = [c for c in self.cases if not c.hidden]
        return (
            round(sum(c.points for c in public), 4),
            round(sum(c.max_points for c in public), 4),
        )

    def killed_by(self) -> list[str]:
        """Ids of the hidden cases that lost points (used by the mutant report)."""
        return [c.id for c in self.cases if c.hidden and c.points < c.max_points]

    def leaderboard(self) -> list[dict] | None:
        """Gradescope's ``leaderboard`` entries from the goodput cases (None without any:
        ``leaderboard.entries``)."""
        return leaderboard_entries([c.metrics for c in self.cases if c.metrics])

    def to_json(self, staff: bool = False) -> dict:
        doc = self._to_json(staff)
        board = self.leaderboard()
        if board is not None:
            doc["leaderboard"] = board
        return doc

    def _to_json(self, staff: bool) -> dict:
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
            **({"seconds": round(self.seconds, 3)} if staff else {}),
            "cases": [
                c.to_json(staff, name)
                for c, name in zip(self.cases, self.names(staff), strict=True)
            ],
        }

    def to_gradescope(self) -> dict:
        """Gradescope's results.json: the total ``score``, one test per case.

        Public cases are ``visible`` tests; hidden cases are tests with the unit's
        ``hidden_visibility`` (default ``after_published``), an opaque name, coarse points and
        coarse feedback. The top-level ``output`` (always shown) sums up public cases only,
        and the grader's own stdout stays hidden (``stdout_visibility``).
        """
        tests = []
        for c, name in zip(self.cases, self.names(), strict=True):
            tests.append(
                {
                    "name": f"{self.part_label(c.part)}: {name}",
                    "score": c.points,
                    "max_score": c.max_points,
                    "status": "passed" if c.status is Status.PASSED else "failed",
                    "output": c.feedback,
                    "visibility": self.hidden_visibility if c.hidden else "visible",
                }
            )
        got, most = self.public_score()
        hidden = sum(1 for c in self.cases if c.hidden)
        lines = [f"{self.unit}: public cases {_pts(got)} / {_pts(most)} points"]
        if hidden:
            when = WHEN_SHOWN.get(self.hidden_visibility, "later")
            lines.append(f"{hidden} hidden cases: results {when}")
        lines += [*self._file_lines(), f"isolation: {self.isolation}", *self.points_lines]
        doc = {  # no execution_time: a submission's time could carry hidden traces' sizes out
            "score": self.score,
            "output": "\n".join(lines),
            "stdout_visibility": "hidden",
            "tests": tests,
        }
        board = self.leaderboard()
        if board is not None:
            doc["leaderboard"] = board
        return doc

    def _summary_lines(self) -> str:
        head = f"{self.unit}: {_pts(self.score)} / {_pts(self.max_score)} points"
        if self.notebook_points:
            head += (
                f" (the graded cases; the notebook's {_pts(self.notebook_points)} points are "
                f"scored in nbgrader; the handout's total is {_pts(self.unit_total)})"
            )
        lines = [head]
        for part, (got, most) in self.parts.items():
            note = self.part_note(part)
            lines.append(
                f"  {self.part_label(part)}: {_pts(got)} / {_pts(most)}"
                + (f" ({note})" if note else "")
            )
        return "\n".join(lines + self._file_lines())

    def _file_lines(self) -> list[str]:
        lines = []
        if self.ignored:
            shown = ", ".join(self.ignored[:8]) + (" ..." if len(self.ignored) > 8 else "")
            lines.append(f"ignored files (only the editable files are graded): {shown}")
        if self.missing:
            lines.append(f"not in the submission (starter version used): {', '.join(self.missing)}")
        return lines

    def text(self, staff: bool = False) -> str:
        """The report for a terminal: every control character but newline and tab shown as an
        escape (``sandbox.output.printable``), so nothing a submission wrote or named redraws
        the lines the grader printed."""
        lines = [self._summary_lines(), f"isolation: {self.isolation}", ""]
        for c, name in zip(self.cases, self.names(staff), strict=True):
            mark = "PASS" if c.status is Status.PASSED else "FAIL"
            vis = "hidden" if c.hidden else "public"
            lines.append(
                f"[{mark}] {name} ({vis}, {self.part_label(c.part)}): "
                f"{_pts(c.points)} / {_pts(c.max_points)}"
            )
            if c.status is not Status.PASSED:
                lines.extend("    " + line for line in c.feedback.splitlines())
                if staff and c.hidden and c.staff_detail != c.feedback:
                    extra = c.staff_detail.splitlines()[1:]
                    lines.extend("    staff: " + line for line in extra)
        return printable("\n".join(lines))


def _pts(value: float) -> str:
    return f"{value:g}"


def _rank(order: list[str], part: str) -> tuple[int, str]:
    """A part's place in ``order``; parts it does not know come last, by id."""
    return (order.index(part), "") if part in order else (len(order), part)
