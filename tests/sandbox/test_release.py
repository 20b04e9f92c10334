"""Release artifacts, tested from the built zips (never from the repo tree)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ADVERSARIAL
from releasetools import assert_nothing_secret, infralab, run_autograder, solution_lines

from grader.cases import load_grading
from grader.course import release
from grader.diagnosis import load_catalogue
from grader.traces.mutants import list_mutants
from grader.units import REPO_ROOT, load_unit, unit_ids


@pytest.fixture(scope="module")
def student_zip(tmp_path_factory, unit) -> Path:
    out = tmp_path_factory.mktemp("student")
    done = infralab("release", "student", "--unit", unit.id, "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out / f"infra-lab-{unit.id}.zip"


def test_student_zip_holds_nothing_secret(student_zip, unit):
    assert_nothing_secret(student_zip, unit)


@pytest.mark.parametrize("unit_id", unit_ids())
def test_every_units_student_zip_holds_nothing_secret(unit_id, tmp_path):
    unit = load_unit(unit_id)
    archive = release.build_student_zip(unit, tmp_path / release.student_zip_name(unit))
    # one common line may recur in given code (unit 08's exercises decode every runner too)
    assert_nothing_secret(archive, unit, common=1)


def test_student_zip_runs_from_the_unpacked_folder(student_zip, unit, tmp_path):
    with zipfile.ZipFile(student_zip) as archive:
        archive.extractall(tmp_path)
    lab = tmp_path / f"infra-lab-{unit.id}"
    python = shutil.which("python3") or sys.executable

    def simulate(*args):
        return subprocess.run(
            [python, "simulate.py", *args], cwd=lab, capture_output=True, text=True, check=False
        )

    pristine = simulate("--trace", "mixed", "--policy", "fcfs")
    assert pristine.returncode != 0
    assert "fcfs() in policies.py is not implemented yet" in pristine.stderr
    assert sorted((lab / "tests").glob("test_*.py")), "the zip must ship the public tests"
    red = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "tests"],
        cwd=lab,
        capture_output=True,
        text=True,
        check=False,
    )
    assert red.returncode != 0
    assert re.search(r"(fcfs|chunked)\(\) .*not implemented", red.stdout + red.stderr)
    shutil.copy(unit.solutions_dir / "policies.py", lab / "policies.py")
    run = simulate("--trace", "mixed", "--policy", "both", "--chunk", "2", "--output", "run.json")
    assert run.returncode == 0, run.stderr
    got = {r["policy"]: r for r in json.loads((lab / "run.json").read_text())["runs"]}
    expected = json.loads((lab / "tests" / "expected" / "mixed.json").read_text())["runs"]
    for policy, want in expected.items():
        times = {r["id"]: r["tokenTimesMs"] for r in got[policy]["requests"]}
        assert times == want["tokenTimesMs"]
    green = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "tests"],
        cwd=lab,
        capture_output=True,
        text=True,
        check=False,
    )
    assert green.returncode == 0, green.stdout[-2000:]


@pytest.fixture(scope="module")
def autograder_root(tmp_path_factory, unit) -> Path:
    """The Gradescope bundle unpacked where Gradescope puts it: <root>/source."""
    out = tmp_path_factory.mktemp("bundle")
    done = infralab("release", "autograder", "--unit", unit.id, "--out", str(out))
    assert done.returncode == 0, done.stderr
    root = tmp_path_factory.mktemp("autograder")
    with zipfile.ZipFile(out / f"infra-lab-{unit.id}-autograder.zip") as archive:
        names = archive.namelist()
        assert {"setup.sh", "run_autograder", "requirements.txt"} <= set(names)
        assert f"labs/{unit.id}/unit.yaml" in names
        assert any(n.startswith(f"traces/{unit.id}/hidden/") for n in names)
        assert any(n.startswith(f"traces/{unit.id}/golden/") for n in names)
        assert f"traces/{unit.id}/golden/labels.key" in names, "hidden cases' stable names"
        assert not [n for n in names if n.startswith("solutions/")]
        body_lines = solution_lines(unit)
        for name in names:  # grading needs golden files, never the solution itself
            text = archive.read(name).decode("utf-8", "replace")
            assert not [line for line in body_lines if line in text], name
        archive.extractall(root / "source")
    for name in ("setup.sh", "run_autograder"):
        os.chmod(root / "source" / name, 0o755)
    assert "pyyaml" in (root / "source" / "requirements.txt").read_text().lower()
    return root


def test_autograder_bundle_grades_from_its_own_files(autograder_root, unit):
    grading = load_grading(unit)
    total = sum(c.points for c in grading.cases)
    source = autograder_root / "source"
    check = subprocess.run(
        [sys.executable, "-c", "import grader; print(grader.__file__)"],
        cwd=source,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(check.stdout.strip()).resolve().is_relative_to(source.resolve())
    assert not Path(check.stdout.strip()).resolve().is_relative_to(REPO_ROOT)

    correct = run_autograder(
        autograder_root, {"policies.py": (unit.solutions_dir / "policies.py").read_bytes()}
    )
    assert correct["score"] == pytest.approx(total)
    assert len(correct["tests"]) == len(grading.cases)
    assert all(t["status"] == "passed" for t in correct["tests"])
    assert "isolation: " in correct["output"]
    hidden = [t for t in correct["tests"] if ": hidden-" in t["name"]]
    assert hidden and all(t["visibility"] == "after_published" for t in hidden)

    wrong = run_autograder(
        autograder_root, {"policies.py": (ADVERSARIAL / "raise_in_chunked.py").read_bytes()}
    )
    fcfs_points = sum(c.points for c in grading.cases if c.part == "fcfs")
    assert wrong["score"] == pytest.approx(fcfs_points)

    cheat = run_autograder(
        autograder_root, {"policies.py": (ADVERSARIAL / "read_secrets.py").read_bytes()}
    )
    assert cheat["score"] == 0
    assert all(t["score"] == 0 for t in cheat["tests"])

    nothing = run_autograder(autograder_root, {"README.md": b"oops\n"})
    assert nothing["score"] == 0 and nothing["tests"] == []
    assert "could not be graded" in nothing["output"] and "policies.py" in nothing["output"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["release", "student", "--unit", "nope"], "unknown unit 'nope'"),
        (["release", "autograder", "--unit", "nope"], "unknown unit 'nope'"),
        (["grade", "--unit", "unit07", "missing-a", "missing-b", "--out", "OUT"], "missing-a"),
        (["grade", "--unit", "unit07", "a", "b"], "needs --out"),
    ],
)
def test_bad_input_is_one_error_line_and_writes_nothing(tmp_path, args, message):
    args = [a.replace("OUT", str(tmp_path / "out")) for a in args]
    done = infralab(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_bundle_carries_the_catalogue_and_the_commit_it_was_built_from(autograder_root, unit):
    source = autograder_root / "source"
    shipped = source / "labs" / unit.id / "diagnoses.yaml"
    assert shipped.read_bytes() == (unit.unit_dir / "diagnoses.yaml").read_bytes()
    assert not (source / "labs" / unit.id / "mutants").exists(), "mutants are near-solutions"
    head = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    stamp = json.loads((source / "autograder.json").read_text())
    assert stamp == {"unit": unit.id, "commit": head}


def _graded_at_home(submission: dict[str, bytes], tmp_path: Path) -> dict:
    """``infralab grade`` from the checkout, in Gradescope's format."""
    folder = tmp_path / "submission"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    for name, data in submission.items():
        (folder / name).write_bytes(data)
    out = tmp_path / "home.json"
    done = infralab("grade", "--unit", "unit07", str(folder), "--gradescope", str(out))
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def _per_case(results: dict) -> list[tuple]:
    return [(t["name"], t["status"], t["score"], t.get("output", "")) for t in results["tests"]]


def test_gradescope_bundle_says_what_infralab_grade_says(autograder_root, unit, tmp_path):
    """Buggy submissions (mutants the catalogue names: a wrong schedule, a refused step, an
    answer against the policy contract, a changed view; and one it does not name) get the same
    status, message and score per case both ways."""
    mutants = {m.name: m for m in list_mutants(unit)}
    named = {name for entry in load_catalogue(unit).entries for name in entry.mutants}
    chosen = [
        "ties_by_id",
        "hardcoded_chunk",
        "one_token_decode",
        "chunk_tokens_float",
        "tracks_progress_in_view",
        "decode_skips_newest",
    ]
    assert set(chosen[:-1]) <= named and chosen[-1] not in named
    diagnosed = 0
    for name in chosen:
        files = mutants[name].submission(unit).files
        home = _graded_at_home(files, tmp_path)
        bundle = run_autograder(autograder_root, files)
        assert _per_case(bundle) == _per_case(home), name
        assert bundle["score"] == home["score"], name
        failed = [t for t in home["tests"] if t["status"] == "failed"]
        assert failed, f"{name} fails no case: not a buggy submission"
        entries = [e.text for e in load_catalogue(unit).entries if name in e.mutants]
        diagnosed += any(text in t["output"] for t in failed for text in entries)
    assert diagnosed == len(chosen) - 1, "the catalogue's texts must reach the bundle's feedback"
