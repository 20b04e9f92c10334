"""``infralab release`` refuses a stale handout and uncommitted hidden material, each unless
told otherwise with its flag, with one message that says what to do and nothing written."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml
from test_throwaway_unit import UNIT_ID, commit_all, infralab, make_course, ok

from grader.course.points import BEGIN, END


@pytest.fixture
def course(tmp_path) -> Path:
    """The toy course with a points table in its handout, synced, golden, committed."""
    root = make_course(tmp_path / "course")
    readme = root / "starter" / UNIT_ID / "README.md"
    readme.write_text(f"# Toy unit\n\n{BEGIN}\n{END}\n", encoding="utf-8")
    ok(infralab(root, "starter", "sync", "--unit", UNIT_ID))
    ok(infralab(root, "golden", "--unit", UNIT_ID))
    commit_all(root)
    return root


def _release(course: Path, kind: str, *flags: str):
    out = Path(tempfile.mkdtemp(dir=course.parent)) / kind  # a fresh folder: nothing written?
    done = infralab(course, "release", kind, "--unit", UNIT_ID, "--out", str(out), *flags)
    return done, sorted(p.name for p in out.glob("*.zip")) if out.exists() else []


def _add_hidden_case(course: Path, points: int) -> None:
    path = course / "labs" / UNIT_ID / "unit.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    case = dict(doc["grading"]["cases"][1], id="oldest-tiny-again", points=points)
    doc["grading"]["cases"].append(case)
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")


@pytest.mark.parametrize("kind", ["student", "autograder"])
def test_release_refuses_a_handout_whose_points_table_is_stale(course, kind):
    """Both releases ship the lab folder: a points table that unit.yaml's cases no longer give
    is refused, with the sync command to run, until ``starter sync`` has run."""
    assert _release(course, kind)[0].returncode == 0
    _add_hidden_case(course, points=4)
    commit_all(course)  # the bundle's other check (uncommitted hidden material) passes
    done, written = _release(course, kind)
    assert done.returncode != 0 and written == []
    assert (
        "points table" in done.stderr and f"infralab starter sync --unit {UNIT_ID}" in done.stderr
    )
    assert "README.md" in done.stderr and "Traceback" not in done.stderr
    assert "--allow-stale-starter" in done.stderr
    for flag in ("--allow-stale-starter", "--allow-stale-readme"):  # the earlier name works too
        if kind == "student":
            assert _release(course, kind, flag)[0].returncode == 0
    ok(infralab(course, "starter", "sync", "--unit", UNIT_ID))
    ok(infralab(course, "golden", "--unit", UNIT_ID))
    commit_all(course)
    assert _release(course, kind)[0].returncode == 0


def test_release_refuses_a_lab_folder_whose_stub_is_stale(course):
    """Not only the handout: a stub that differs from what the solution makes is refused."""
    stub = course / "starter" / UNIT_ID / "policies.py"
    stub.write_text(stub.read_text(encoding="utf-8") + "\n# edited by hand\n", encoding="utf-8")
    done, written = _release(course, "student")
    assert done.returncode != 0 and written == []
    assert "policies.py" in done.stderr and "points table" not in done.stderr
    ok(infralab(course, "starter", "sync", "--unit", UNIT_ID))
    assert _release(course, "student")[0].returncode == 0


@pytest.mark.parametrize("where", ["unit.yaml", "new hidden trace"])
def test_release_autograder_refuses_uncommitted_hidden_material(course, where):
    assert _release(course, "autograder")[0].returncode == 0
    if where == "unit.yaml":
        _add_hidden_case(course, points=1)
        ok(infralab(course, "starter", "sync", "--unit", UNIT_ID))  # the lab folder is not stale
        named = f"labs/{UNIT_ID}/unit.yaml"
    else:
        named = f"traces/{UNIT_ID}/hidden/extra.json"
        (course / named).parent.mkdir(parents=True, exist_ok=True)
        (course / named).write_text("{}\n", encoding="utf-8")
    done, written = _release(course, "autograder")
    assert done.returncode != 0 and written == []
    assert named in done.stderr and "git commit" in done.stderr
    assert "--allow-uncommitted" in done.stderr and "Traceback" not in done.stderr
    if where == "new hidden trace":  # a junk file the flag lets through
        assert _release(course, "autograder", "--allow-uncommitted")[0].returncode == 0


def test_release_autograder_outside_git_is_refused_with_the_way_out(tmp_path):
    root = make_course(tmp_path / "course")
    ok(infralab(root, "starter", "sync", "--unit", UNIT_ID))
    ok(infralab(root, "golden", "--unit", UNIT_ID))
    done, written = _release(root, "autograder")
    assert done.returncode != 0 and written == []
    assert "git" in done.stderr and "--allow-uncommitted" in done.stderr
    assert _release(root, "autograder", "--allow-uncommitted")[0].returncode == 0


def test_release_nbgrader_refuses_a_stale_lab_folder_and_writes_nothing(course):
    """The nbgrader course stages the lab folder as ``source/<unit>/``: a stale one is refused
    the same way, before the course folder is touched."""
    _add_hidden_case(course, points=4)
    target = course.parent / "nbcourse"
    done = infralab(course, "release", "nbgrader", "--unit", UNIT_ID, "--course", str(target))
    assert done.returncode != 0 and not target.exists()
    assert "points table" in done.stderr and "--allow-stale-starter" in done.stderr
