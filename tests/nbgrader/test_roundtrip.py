"""Each unit's nbgrader assignment end to end, in a real nbgrader course with a gradebook.

Per unit with a notebook (the ``course`` fixture is parametrised by unit): ``infralab release
nbgrader`` sets the course up in a temp directory and generates the student version; two
fabricated submissions go under ``submitted/`` (one correct; one with a buggy editable file and
wrong numbers, see ``nbgrader_plans.py``); ``nbgrader autograde`` grades them into the gradebook
database, which the tests read.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbgrader")

from kernelhost import kernel_blocked  # noqa: E402
from nbgrader.api import Gradebook  # noqa: E402
from nbgrader_plans import PLANS  # noqa: E402

from grader.course import nbcheck, nbgrader_course  # noqa: E402
from grader.labfolder import lab_files  # noqa: E402
from grader.units import load_unit  # noqa: E402

MARKER = re.compile(r"^\s*#+\s*(BEGIN|END) SOLUTION\s*$")
UNITS = sorted(PLANS)


@dataclass(frozen=True)
class Course:
    root: Path
    unit: object
    source_nb: object  # nbformat node of source/<unit>/<unit>.ipynb
    release_nb: object
    autograde_log: str

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.root / 'gradebook.db'}"

    @property
    def id(self) -> str:
        return self.unit.id

    @property
    def notebook(self) -> str:
        return f"{self.unit.id}.ipynb"


def without_markers(source: str) -> str:
    return "\n".join(line for line in source.splitlines() if not MARKER.match(line))


def answered(release_nb, source_nb, overrides: dict[str, str]):
    """The released notebook with every answer cell filled in, as a student would submit it.

    An answer comes from ``overrides`` (by grade id) or else from the source notebook's model
    solution without its markers.
    """
    solutions = {c.metadata["nbgrader"]["grade_id"]: c.source for c in source_nb.cells}
    notebook = nbformat.from_dict(json.loads(nbformat.writes(release_nb)))
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            grade_id = meta["grade_id"]
            cell.source = overrides.get(grade_id, without_markers(solutions[grade_id]))
    return notebook


def submit(course_root: Path, unit, student: str, notebook, files: dict[str, str]) -> Path:
    """Lay out ``submitted/<student>/<unit>/`` like a collected student folder; ``files`` are
    the student's editable files (name -> text) over the released ones."""
    folder = course_root / "submitted" / student / unit.id
    for rel, path in lab_files(unit).items():
        dest = folder / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(path.read_bytes())
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    nbformat.write(notebook, folder / f"{unit.id}.ipynb")
    return folder


def reference_files(unit) -> dict[str, str]:
    """The unit's editable files as the reference solution has them."""
    return {n: (unit.solutions_dir / n).read_text(encoding="utf-8") for n in unit.editable}


def wrong_files(unit) -> dict[str, str]:
    """Bob's editable files: the reference ones with the plan's buggy file(s) over them."""
    return reference_files(unit) | PLANS[unit.id].wrong_files(unit)


# One xdist group per unit: the tests of a course run on one worker, which autogrades it once
# (a session fixture is made once per worker).
@pytest.fixture(
    scope="session",
    params=[pytest.param(u, marks=pytest.mark.xdist_group(f"nbgrader-course-{u}")) for u in UNITS],
)
def course(request, tmp_path_factory) -> Course:
    if (blocked := kernel_blocked()) is not None:
        pytest.skip(blocked)
    unit = load_unit(request.param)
    root = tmp_path_factory.mktemp(f"course-{unit.id}")
    result = nbgrader_course.release_nbgrader(unit, root)
    notebook = f"{unit.id}.ipynb"
    source_nb = nbformat.read(result.source / notebook, as_version=4)
    release_nb = nbformat.read(result.release / notebook, as_version=4)
    submit(root, unit, "alice", answered(release_nb, source_nb, {}), reference_files(unit))
    bob = answered(release_nb, source_nb, PLANS[unit.id].literal_answers(unit))
    submit(root, unit, "bob", bob, wrong_files(unit))
    done = nbgrader_course.nbgrader(root, "autograde", unit.id, "--force")
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    return Course(root, unit, source_nb, release_nb, log)


POLICY_CELL = "policies_hidden"


def grade_cells(nb) -> dict[str, float]:
    """Autograder test cells of a notebook: grade id -> points."""
    return {
        c.metadata["nbgrader"]["grade_id"]: float(c.metadata["nbgrader"]["points"])
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"
    }


def scores(course: Course, student: str) -> dict[str, tuple[float | None, float]]:
    """grade id -> (auto score, max score) for every graded cell, read from the gradebook."""
    with Gradebook(course.db_url, "infralab") as gradebook:
        notebook = gradebook.find_submission_notebook(course.id, course.id, student)
        return {g.name: (g.auto_score, g.max_score) for g in notebook.grades}


def policy_fraction(course: Course, files: dict[str, str]) -> float:
    """The share of the policy cell's points the grader gives ``files`` (computed here)."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, text in files.items():
            paths.append(Path(tmp) / name)
            paths[-1].write_text(text, encoding="utf-8")
        report = nbcheck.grade_policies(course.unit, paths)
    return report["score"] / report["maxScore"]


def test_correct_submission_gets_every_autograded_point(course):
    autograded = grade_cells(course.source_nb)
    got = scores(course, "alice")
    assert set(autograded) <= set(got)
    for grade_id, points in autograded.items():
        assert got[grade_id] == (points, points), grade_id
    total = sum(got[g][0] for g in autograded)
    assert total == sum(autograded.values()) > 0
    print(f"alice: {total:g}/{sum(autograded.values()):g} autograded points")


def test_wrong_submission_loses_exactly_the_points_of_its_wrong_cells(course):
    autograded = grade_cells(course.source_nb)
    got = scores(course, "bob")
    wrong_cells = PLANS[course.id].wrong_cells
    fraction = policy_fraction(course, wrong_files(course.unit))
    assert fraction < 1, "the buggy policy must fail some hidden case"
    for grade_id, points in autograded.items():
        if grade_id in wrong_cells:
            expected = 0.0
        elif grade_id == POLICY_CELL:
            expected = round(points * fraction, 2)  # the cell rounds for clean exports
        else:
            expected = points
        assert got[grade_id][0] == pytest.approx(expected), grade_id
    lost = sum(points - got[g][0] for g, points in autograded.items())
    expected_lost = sum(autograded[g] for g in wrong_cells)
    expected_lost += autograded[POLICY_CELL] - round(autograded[POLICY_CELL] * fraction, 2)
    assert lost == pytest.approx(expected_lost)
    policy_score = got[POLICY_CELL][0]
    assert policy_score == round(policy_score, 2), "exported scores carry no float noise"


def test_written_answers_wait_for_a_ta(course):
    manual = {
        c.metadata["nbgrader"]["grade_id"]
        for c in course.source_nb.cells
        if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("grade")
    }
    assert manual == {"d1_explain", "d2_explain", "d3_explain"}
    with Gradebook(course.db_url, "infralab") as gradebook:
        notebook = gradebook.find_submission_notebook(course.id, course.id, "alice")
        pending = {g.name for g in notebook.grades if g.needs_manual_grade}
    assert manual <= pending


def test_released_notebook_has_no_solution_and_no_hidden_test(course):
    released = (course.root / "release" / course.id / course.notebook).read_text(encoding="utf-8")
    for marker in (
        "BEGIN SOLUTION",
        "END SOLUTION",
        "HIDDEN TESTS",
        "grader.course.nbcheck",
        "_trusted",
    ):
        assert marker not in released
    # every line of a model answer or a hidden region that is not also public text is gone
    public, secret = set(), set()
    for cell in course.source_nb.cells:
        regions = _regions(cell.source, "SOLUTION") + _regions(cell.source, "HIDDEN TESTS")
        inside = {line.strip() for region in regions for line in region}
        secret |= inside
        public |= {line.strip() for line in cell.source.splitlines()} - inside
    secret = {line for line in secret - public if len(line) > 8}
    assert len(secret) > 20
    released_lines = {
        line.strip() for cell in course.release_nb.cells for line in cell.source.splitlines()
    }
    leaked = sorted(secret & released_lines)
    assert not leaked
    # the released policies.py is the starter, not the solution
    policies = (course.root / "release" / course.id / "policies.py").read_text(encoding="utf-8")
    assert "NotImplementedError" in policies and "BEGIN SOLUTION" not in policies


def _regions(source: str, name: str) -> list[list[str]]:
    regions, current = [], None
    for line in source.splitlines():
        if line.strip() == f"### BEGIN {name}":
            current = []
        elif line.strip() == f"### END {name}":
            regions.append(current)
            current = None
        elif current is not None:
            current.append(line)
    return regions


def run_validate(course: Course, notebook, files: dict[str, str] | None) -> str:
    """``nbgrader validate`` on ``notebook`` in a copy of the released folder; its output."""
    folder = Path(tempfile.mkdtemp(dir=course.root / ".infralab", prefix="validate-"))
    try:
        shutil.copytree(course.root / "release" / course.id, folder, dirs_exist_ok=True)
        for name, text in (files or {}).items():
            (folder / name).write_text(text, encoding="utf-8")
        path = folder / course.notebook
        nbformat.write(notebook, path)
        done = nbgrader_course.nbgrader(course.root, "validate", str(path))
        return done.stdout + done.stderr
    finally:
        shutil.rmtree(folder)


def test_validate_passes_on_the_solution_notebook(course):
    """The instructor's notebook, hidden tests included, passes with the reference policies."""
    output = run_validate(course, course.source_nb, reference_files(course.unit))
    assert "Success! Your notebook passes all the tests." in output, output[-3000:]


def test_validate_passes_on_the_answered_release(course):
    answers = answered(course.release_nb, course.source_nb, {})
    output = run_validate(course, answers, reference_files(course.unit))
    assert "Success! Your notebook passes all the tests." in output, output[-3000:]


def test_validate_fails_on_the_unanswered_release(course):
    output = run_validate(course, course.release_nb, None)
    failed = re.search(r"VALIDATION FAILED ON (\d+) CELL\(S\)!", output)
    assert failed, output[-3000:]
    # every autograder test fails while the answers and policies.py are left as released
    assert int(failed.group(1)) >= len(grade_cells(course.source_nb))
    assert "RuntimeError: simulate.py" in output  # the stub policies stop the first run


NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")


def _hidden_traces(unit) -> list[dict]:
    return [
        json.loads(p.read_text(encoding="utf-8"))
        for p in sorted((unit.traces_dir / "hidden").glob("*.json"))
    ]


def _triples(trace: dict) -> set[tuple[float, float, float]]:
    return {
        (float(r["arrivalMs"]), float(r["inputTokens"]), float(r["outputTokens"]))
        for r in trace["requests"]
    }


def test_student_notebook_holds_no_hidden_trace_data(course):
    """No hidden trace's name, request ids, description or request rows in the student's text."""
    hidden = _hidden_traces(course.unit)
    if not hidden:
        pytest.skip(f"{course.id} has no hidden traces yet (traces/{course.id}/hidden/)")
    public = [
        json.loads(p.read_text(encoding="utf-8"))
        for p in sorted((course.unit.lab_dir / "traces").glob("*.json"))
    ]
    public_ids = {r["id"] for t in public for r in t["requests"]}
    public_rows = set().union(*(_triples(t) for t in public))
    released = nbformat.read(course.root / "release" / course.id / course.notebook, as_version=4)
    text = "\n".join(
        [cell.source for cell in released.cells]
        + [json.dumps(cell.get("outputs", []), ensure_ascii=False) for cell in released.cells]
    )
    numbers = [float(n) for n in NUMBER.findall(text)]
    windows = set(zip(numbers, numbers[1:], numbers[2:], strict=False))
    for trace in hidden:
        words = {trace["name"]} | {r["id"] for r in trace["requests"]} - public_ids
        for word in words:
            assert not re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text), word
        assert trace.get("description", "")[:40] not in text or not trace.get("description")
        rows = _triples(trace) - public_rows
        assert not rows & windows, (trace["name"], sorted(rows & windows))
