"""``infralab release nbgrader`` (without running nbgrader) and every unit's source notebook."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbgrader")

from nbgrader.preprocessors import Execute, SaveAutoGrades  # noqa: E402
from traitlets.config.loader import PyFileConfigLoader  # noqa: E402

from grader.cli import main  # noqa: E402
from grader.course import nbgrader_course, nbscores  # noqa: E402
from grader.course.nbautograde import SandboxedAutograde, autograded_cells, cell_checks  # noqa: E402
from grader.labfolder import lab_files  # noqa: E402
from grader.units import load_unit  # noqa: E402

UNIT = "unit07"  # the course-directory tests need one unit; the notebook tests take each
NOTEBOOK_UNITS = [unit.id for unit in nbgrader_course.notebook_units()]


def test_every_unit_with_a_notebook_is_covered():
    assert {"unit07", "unit08"} <= set(NOTEBOOK_UNITS)


def setup_course(course, *extra, unit=UNIT) -> int:
    return main(["release", "nbgrader", "--unit", unit, "--course", str(course), *extra])


def load_config(course):
    return PyFileConfigLoader(nbgrader_course.CONFIG, path=str(course)).load_config()


@pytest.mark.parametrize("unit_id", NOTEBOOK_UNITS)
def test_setup_writes_config_kernel_and_source(tmp_path, capsys, unit_id):
    course = tmp_path / "course"
    assert setup_course(course, "--no-generate", unit=unit_id) == 0
    assert "staged" in capsys.readouterr().out
    unit = load_unit(unit_id)
    staged = sorted(
        p.relative_to(course / "source" / unit_id).as_posix()
        for p in (course / "source" / unit_id).rglob("*")
        if p.is_file()
    )
    expected = sorted([*lab_files(unit), f"{unit_id}.ipynb"])
    assert staged == expected
    config = load_config(course)
    # every notebook unit's editable files, whichever unit was set up
    assert config.Autograde.exclude_overwriting == {
        u: list(load_unit(u).editable) for u in NOTEBOOK_UNITS
    }
    assert config.Autograde.exclude_overwriting[unit_id] == list(unit.editable)
    assert config.ExecutePreprocessor.kernel_name == nbgrader_course.KERNEL_NAME
    assert config.CourseDirectory.root == str(course.resolve())
    kernel = course / ".infralab/jupyter/kernels" / nbgrader_course.KERNEL_NAME / "kernel.json"
    argv = json.loads(kernel.read_text())["argv"]
    assert argv[:3] == [sys.executable, "-m", "grader.course.nbkernel"]  # the sandboxed kernel
    steps = config.Autograde.autograde_preprocessors
    assert SandboxedAutograde in steps and Execute not in steps
    assert steps.index(SandboxedAutograde) < steps.index(SaveAutoGrades)


def test_rerun_keeps_the_tas_settings_and_replaces_source(tmp_path):
    course = tmp_path / "course"
    assert setup_course(course, "--no-generate") == 0
    config = course / nbgrader_course.CONFIG
    config.write_text(config.read_text() + "c.Execute.timeout = 7\n")
    stale = course / "source" / UNIT / "left-over.txt"
    stale.write_text("old")
    assert setup_course(course, "--no-generate", "--course-id", "ta-course") == 0
    loaded = load_config(course)
    assert loaded.Execute.timeout == 7
    assert loaded.CourseDirectory.course_id == "ta-course"
    assert not stale.exists()
    assert (course / "source" / UNIT / "policies.py").is_file()


def test_foreign_config_is_refused_and_nothing_written(tmp_path, capsys):
    course = tmp_path / "course"
    course.mkdir()
    (course / nbgrader_course.CONFIG).write_text("c = get_config()\n")
    assert setup_course(course) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not load infralab_nbgrader_config.py" in err[0]
    assert sorted(p.name for p in course.iterdir()) == [nbgrader_course.CONFIG]


def test_unknown_unit_is_one_error_line(tmp_path, capsys):
    argv = ["release", "nbgrader", "--unit", "unit99", "--course", str(tmp_path / "c")]
    assert main(argv) == 2
    assert "unknown unit 'unit99'" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


# --- the source notebook ---------------------------------------------------------------


def _builder(unit_id):
    path = nbgrader_course.notebook_dir(load_unit(unit_id)) / "build_notebook.py"
    spec = importlib.util.spec_from_file_location(f"_{unit_id}_notebook_builder", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("unit_id", NOTEBOOK_UNITS)
def test_committed_notebook_is_what_the_builder_writes(unit_id):
    builder = _builder(unit_id)
    assert builder.NOTEBOOK.read_text(encoding="utf-8") == builder.render()


def _cells(unit_id):
    notebook = nbformat.read(_builder(unit_id).NOTEBOOK, as_version=4)
    return [(c, c.metadata["nbgrader"]) for c in notebook.cells]


@pytest.mark.parametrize("unit_id", NOTEBOOK_UNITS)
def test_every_cell_is_an_nbgrader_cell_with_a_unique_id(unit_id):
    cells = _cells(unit_id)
    ids = [meta["grade_id"] for _, meta in cells]
    assert len(ids) == len(set(ids))
    for cell, meta in cells:
        if meta["grade"]:
            assert meta["points"] > 0
        if meta["solution"]:
            assert "### BEGIN SOLUTION" in cell.source and "### END SOLUTION" in cell.source


@pytest.mark.parametrize("unit_id", NOTEBOOK_UNITS)
def test_autograder_tests_hold_no_expected_numbers_and_no_grading_code(unit_id):
    """Test cells hold a local shape check and a hand-in: no number, no hidden region, no
    call into the staff package (the kernel could not reach it)."""
    tests = [(c, m) for c, m in _cells(unit_id) if m["grade"] and c.cell_type == "code"]
    assert tests
    for cell, meta in tests:
        tree = ast.parse(cell.source)
        floats = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
        floats = [v for v in floats if isinstance(v, float)]
        assert not floats, (meta["grade_id"], floats)
        for word in ("HIDDEN TESTS", "grader", "nbcheck", "subprocess"):
            assert word not in cell.source, (meta["grade_id"], word)


def _handed_in(cell) -> set[str]:
    """The answer names a test cell hands in (its ``hand_in(name=name, ...)`` call)."""
    calls = [
        node
        for node in ast.walk(ast.parse(cell.source))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "hand_in"
    ]
    return {keyword.arg for call in calls for keyword in call.keywords}


@pytest.mark.parametrize("unit_id", NOTEBOOK_UNITS)
def test_every_autograded_cell_has_a_check_for_what_it_hands_in(unit_id):
    """The trusted scorer has a check for each autograded cell, reading exactly the answers the
    cell hands in; a cell without one would stop the autograding (``CheckError``)."""
    checks = cell_checks(load_unit(unit_id))
    notebook = nbformat.read(_builder(unit_id).NOTEBOOK, as_version=4)
    cells = autograded_cells(notebook)
    assert {c.metadata["nbgrader"]["grade_id"] for c in cells} == set(checks)
    for cell in cells:
        found = checks[cell.metadata["nbgrader"]["grade_id"]]
        assert _handed_in(cell) == nbscores.names(found), cell.metadata["nbgrader"]["grade_id"]


@pytest.mark.parametrize("unit_id", NOTEBOOK_UNITS)
def test_each_deliverable_has_autograded_and_written_parts(unit_id):
    cells = _cells(unit_id)
    autograded = {m["grade_id"][:2] for c, m in cells if m["grade"] and c.cell_type == "code"}
    manual = {m["grade_id"] for c, m in cells if m["grade"] and c.cell_type == "markdown"}
    assert {"d1", "d2", "d3"} <= autograded
    assert manual == {"d1_explain", "d2_explain", "d3_explain"}


@pytest.mark.parametrize("unit_id", NOTEBOOK_UNITS)
def test_policy_cell_is_scored_from_the_submitted_files(unit_id):
    """The policy cell hands nothing in: its score is the grader's, from the editable files."""
    (cell,) = [c for c, m in _cells(unit_id) if m["grade_id"] == "policies_hidden"]
    assert not _handed_in(cell)
    assert cell_checks(load_unit(unit_id))["policies_hidden"] == (nbscores.Policies(),)
