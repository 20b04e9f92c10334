"""A unit is a plug-in: a throwaway unit in a temp folder, built from docs/units.md alone, goes
through every staff command.

docs/units.md's table ("What a unit is made of") says where each file of a unit goes and which
ones a new unit needs; its section "The smallest unit" gives those files for a unit ``toy`` (one
policy, one trace, a public and a hidden graded case). The course here is written from that
section and nothing else, so the documentation cannot drift from what the code needs: the
section must give exactly the needed files, each of them must be needed (without it a command
fails), and the files the table says a command makes must be made. Nothing in grader/ knows
the unit: the commands find it through ``--root`` (the course root), as they would a new unit.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from unitdoc import FILES, ROWS, UNIT_ID, make_course

from grader.units import CODE_ROOT


def infralab(root: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "INFRALAB_ROOT"}
    return subprocess.run(
        [sys.executable, "-m", "grader.cli", "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=cwd or CODE_ROOT,
        check=False,
    )


def commit_all(root: Path) -> None:
    """Commit the course folder as it is (``release autograder`` ships committed material only)."""
    git = ["git", "-c", "user.name=staff", "-c", "user.email=staff@example.invalid"]
    if not (root / ".git").exists():
        subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "course"], cwd=root, check=True)


def ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """The toy course after ``starter sync`` and ``golden`` (both checked in the first test),
    committed in git."""
    root = make_course(tmp_path_factory.mktemp("course"))
    ok(infralab(root, "starter", "sync", "--unit", UNIT_ID))
    ok(infralab(root, "golden", "--unit", UNIT_ID))
    commit_all(root)
    return root


def unit_doc() -> dict:
    return yaml.safe_load(FILES[f"labs/{UNIT_ID}/unit.yaml"])


def test_the_smallest_unit_gives_exactly_the_files_the_table_says_a_unit_needs():
    needed = [row for row in ROWS if row.needed == "yes"]
    assert {row.needed for row in ROWS} == {"yes", "no", "made"}, ROWS
    assert len(needed) >= 5, "the table lost its needed rows"
    for row in needed:
        assert [p for p in FILES if row.matches(p)], f"the smallest unit has no {row.paths}"
    for path in FILES:
        assert [row for row in needed if row.matches(path)], f"{path}: not a needed file"
        assert not [row for row in ROWS if row.needed != "yes" and row.matches(path)], path


# The steps of "A new unit, step by step", in order: without a needed file, one of them fails.
COMMANDS = (
    ("starter", "sync", "--unit", UNIT_ID),
    ("golden", "--unit", UNIT_ID),
    ("grade", "--unit", UNIT_ID, "{root}/solutions/" + UNIT_ID),
    ("release", "student", "--unit", UNIT_ID, "--out", "{root}/dist"),
    ("site", "build", "--out", "{root}/site"),
    ("lab", "open", "--unit", UNIT_ID, "{root}/lab"),
)


def first_failure(root: Path, capsys) -> tuple[str, str] | None:
    """The first step that fails in ``root`` (the commands run in this process), with its
    output; the last step runs the opened lab folder's simulate.py on the reference solution,
    as a student with a finished lab would."""
    from grader.cli.main import main

    for step in COMMANDS:
        argv = ["--root", str(root), *(a.format(root=root) for a in step)]
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = exc.code
        out = capsys.readouterr()
        if code != 0:
            return " ".join(step), out.out + out.err
    unit = unit_doc()
    for name in unit["editable"]:
        shutil.copyfile(root / unit["solutions"] / name, root / "lab" / name)
    trace, policy = unit["public_traces"][0], unit["policies"][0]["name"]
    argv = [sys.executable, "-I", "-S", "simulate.py", "--trace", trace, "--policy", policy]
    done = subprocess.run(argv, cwd=root / "lab", capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return "simulate.py", done.stdout + done.stderr
    return None


def test_the_smallest_unit_passes_the_first_steps(tmp_path, capsys):
    assert first_failure(make_course(tmp_path), capsys) is None


@pytest.mark.parametrize("leave_out", sorted(FILES))
def test_each_needed_file_is_needed(tmp_path, capsys, leave_out):
    """Without any one of the needed files, one of the first steps fails with an error that
    names what is missing."""
    failed = first_failure(make_course(tmp_path, leave_out=leave_out), capsys)
    assert failed is not None, f"nothing needs {leave_out}"
    step, output = failed
    name = Path(leave_out).name
    named = (name, Path(leave_out).stem, Path(leave_out).parent.name, UNIT_ID)
    assert any(n in output for n in named), f"{step}: {output}"


def test_units_lists_only_the_courses_own_units(course):
    lines = ok(infralab(course, "units")).splitlines()
    cases = unit_doc()["grading"]["cases"]
    hidden = sum(c["visibility"] == "hidden" for c in cases)
    assert len(lines) == 1 and lines[0].startswith(f"{UNIT_ID}  {unit_doc()['title']}")
    assert f"cases {len(cases)} ({hidden} hidden)" in lines[0]


def test_the_commands_make_the_files_the_table_says_they_make(course):
    made = [row for row in ROWS if row.needed == "made"]
    assert made, "the table lost its rows of made files"
    files = [p.relative_to(course).as_posix() for p in course.rglob("*") if p.is_file()]
    for row in made:
        assert [p for p in files if row.matches(p)], f"{row.written_by} did not make {row.paths}"
    for case in unit_doc()["grading"]["cases"]:
        assert f"traces/{UNIT_ID}/golden/{case['id']}.json" in files


def test_starter_sync_and_golden_write_the_generated_files(course):
    lab = course / "starter" / UNIT_ID
    stub = (lab / "policies.py").read_text(encoding="utf-8")
    assert 'raise NotImplementedError("oldest_first() is not implemented yet")' in stub
    assert "view.running[:1]" not in stub
    assert json.loads((lab / "lab.json").read_text())["unit"] == UNIT_ID
    assert not (lab / "servesim").exists()  # the engine joins the lab folder when it is made
    snapshot = json.loads((lab / "tests" / "expected" / "tiny.json").read_text())
    trace = json.loads(FILES[f"starter/{UNIT_ID}/traces/tiny.json"])
    ids = sorted(r["id"] for r in trace["requests"])
    assert sorted(snapshot["runs"]["oldest"]["tokenTimesMs"]) == ids
    golden = sorted(p.name for p in (course / "traces" / UNIT_ID / "golden").iterdir())
    cases = sorted(f"{c['id']}.json" for c in unit_doc()["grading"]["cases"])
    assert golden == sorted(["labels.key", *cases])  # hidden: keyed labels
    assert ok(infralab(course, "starter", "sync", "--unit", UNIT_ID, "--check")) == ""
    ok(infralab(course, "golden", "--unit", UNIT_ID, "--check"))


def test_lab_open_makes_the_lab_folder_with_the_engine_the_unit_names(course, tmp_path):
    lab = tmp_path / "lab"
    ok(infralab(course, "lab", "open", "--unit", UNIT_ID, str(lab)))
    assert (lab / "servesim" / "engine.py").read_bytes() == (
        CODE_ROOT / "servesim" / "engine.py"
    ).read_bytes()
    assert not (lab / "realdevice").exists()  # the unit ships only the engine it names
    assert (lab / "traces" / "tiny.json").is_file() and (lab / "lab.json").is_file()
    argv = [sys.executable, "-I", "-S", "simulate.py", "--trace", "tiny", "--policy", "oldest"]
    stub = subprocess.run(argv, cwd=lab, capture_output=True, text=True, timeout=60)
    assert stub.returncode == 1
    assert "oldest_first() in policies.py is not implemented yet" in stub.stderr
    shutil.copyfile(course / "solutions" / UNIT_ID / "policies.py", lab / "policies.py")
    solved = subprocess.run(argv, cwd=lab, capture_output=True, text=True, timeout=60)
    assert solved.returncode == 0, solved.stderr


def full_marks() -> float:
    return float(sum(c["points"] for c in unit_doc()["grading"]["cases"]))


@pytest.mark.parametrize(("folder", "share"), [("solutions", 1.0), ("starter", 0.0)])
def test_grade_gives_the_reference_full_marks_and_the_stubs_none(course, folder, share):
    report = course / f"{folder}.json"
    submission = course / folder / UNIT_ID
    ok(infralab(course, "grade", "--unit", UNIT_ID, str(submission), "--json", str(report)))
    doc = json.loads(report.read_text(encoding="utf-8"))
    assert (doc["score"], doc["maxScore"]) == (share * full_marks(), full_marks())


def test_release_student_ships_the_lab_folder_only(course):
    out = course / "dist"
    ok(infralab(course, "release", "student", "--unit", UNIT_ID, "--out", str(out)))
    with zipfile.ZipFile(out / f"infra-lab-{UNIT_ID}.zip") as archive:
        names = set(archive.namelist())
        stub = archive.read(f"infra-lab-{UNIT_ID}/policies.py").decode()
    root = f"infra-lab-{UNIT_ID}"
    assert {f"{root}/simulate.py", f"{root}/lab.json", f"{root}/traces/tiny.json"} <= names
    assert "view.running[:1]" not in stub
    assert not [n for n in names if "golden" in n or "solutions" in n]


def test_release_autograder_bundle_grades_on_its_own(course, tmp_path):
    out = course / "dist"
    ok(infralab(course, "release", "autograder", "--unit", UNIT_ID, "--out", str(out)))
    source = tmp_path / "autograder" / "source"
    with zipfile.ZipFile(out / f"infra-lab-{UNIT_ID}-autograder.zip") as archive:
        names = set(archive.namelist())
        archive.extractall(source)
    assert {f"labs/{UNIT_ID}/unit.yaml", f"traces/{UNIT_ID}/golden/oldest-tiny.json"} <= names
    assert not [n for n in names if n.startswith(("solutions/", "labs/unit07", "traces/unit07"))]
    pins = (source / "requirements.txt").read_text().split()
    assert pins and all("==" in pin for pin in pins)
    assert not {"numpy", "jinja2", "torch"} & {pin.split("==")[0].lower() for pin in pins}
    submission = tmp_path / "autograder" / "submission"
    submission.mkdir()
    shutil.copyfile(course / "solutions" / UNIT_ID / "policies.py", submission / "policies.py")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "INFRALAB_AUTOGRADER_ROOT": str(tmp_path / "autograder"),
        "INFRALAB_PYTHON": sys.executable,
    }
    done = subprocess.run(
        ["bash", str(source / "run_autograder")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd="/",
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((tmp_path / "autograder" / "results" / "results.json").read_text())
    assert results["score"] == pytest.approx(full_marks()), results


def test_site_build_renders_the_toy_unit(course):
    out = course / "site"
    ok(infralab(course, "site", "build", "--out", str(out)))
    assert (out / UNIT_ID / "handout.html").is_file()
    assert not (out / UNIT_ID / "index.html").exists()  # no lesson template: no lesson page
    assert unit_doc()["title"] in (out / "index.html").read_text(encoding="utf-8")


def test_two_units_in_one_process(course, monkeypatch):
    """unit07 and the toy unit, each with its own root, rebuild their golden runs side by side."""
    from grader.cases import load_grading
    from grader.course import golden
    from grader.units import load_unit

    unit07 = load_unit("unit07")
    monkeypatch.setenv("INFRALAB_ROOT", str(course))
    toy = load_unit(UNIT_ID)
    monkeypatch.delenv("INFRALAB_ROOT")
    assert toy.course_root == course.resolve() and unit07.course_root == CODE_ROOT
    for unit in (toy, unit07, toy):
        case = load_grading(unit).cases[0]
        on_disk = json.loads(golden.golden_path(unit, case).read_text(encoding="utf-8"))
        assert golden.build_golden(unit, case)["run"] == on_disk["run"], unit.id
