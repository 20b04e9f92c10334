"""Bad inputs to every command: one clear error line, exit 2, nothing written."""

from __future__ import annotations

import json
import zipfile

import pytest

from grader.cases import load_grading
from grader.cli import main
from grader.grading.submission import SubmissionError, load_submission
from grader.units import Unit, UnitError, unit_ids

SOLUTION_CASES = ["--case", "fcfs-mixed", "--case", "chunked-ties-chunk2"]


def _one_error(capsys, needle: str) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("infralab: error: "), err
    assert "\n" not in err, err
    assert needle in err, err
    return err


@pytest.mark.parametrize(
    "argv",
    [
        ["golden", "--unit", "nope"],
        ["golden", "--unit", "nope", "--check"],
        ["grade", "--unit", "nope", "."],
        ["trace", "new", "--unit", "nope", "--spec", "x.yaml"],
        [
            "trace",
            "import",
            "--unit",
            "nope",
            "--azure",
            "x.csv",
            "--duration",
            "1",
            "--scale",
            "1",
        ],
        ["trace", "check", "--unit", "nope"],
        ["trace", "mutants", "--unit", "nope"],
    ],
)
def test_missing_unit(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    known = ", ".join(unit_ids())  # every unit of the course root, in its order
    assert known.startswith("unit07, unit08")
    _one_error(capsys, f"unknown unit 'nope' (known: {known})")
    assert list(tmp_path.iterdir()) == []


def _zip(path, entries: dict[str, bytes]):
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return path


@pytest.fixture
def solution_bytes(unit):
    return (unit.solutions_dir / "policies.py").read_bytes()


def _grade(tmp_path, submission, *extra):
    out = tmp_path / "out"
    argv = ["grade", "--unit", "unit07", str(submission), *extra]
    argv += ["--json", str(out / "report.json"), "--gradescope", str(out / "results.json")]
    return main(argv), out


@pytest.mark.parametrize(
    ("entries", "needle"),
    [
        ({"../policies.py": b"x"}, "entry '../policies.py' escapes the zip's folder"),
        ({"a/../../policies.py": b"x"}, "escapes the zip's folder"),
        ({"/abs/policies.py": b"x"}, "escapes the zip's folder"),
        ({"C:/policies.py": b"x"}, "escapes the zip's folder"),
        ({"notes.txt": b"x"}, "none of the editable files (policies.py) is in it"),
        ({"a/policies.py": b"x", "b/policies.py": b"y"}, "more than one policies.py"),
    ],
)
def test_bad_zip_submissions(tmp_path, capsys, entries, needle):
    code, out = _grade(tmp_path, _zip(tmp_path / "sub.zip", entries))
    assert code == 2
    _one_error(capsys, needle)
    assert not out.exists()


def test_unreadable_zip(tmp_path, capsys):
    bad = tmp_path / "sub.zip"
    bad.write_bytes(b"PK\x03\x04 this is not really a zip")
    code, out = _grade(tmp_path, bad)
    assert code == 2
    _one_error(capsys, "not a readable zip file")
    assert not out.exists()


def test_missing_submission(tmp_path, capsys):
    code, out = _grade(tmp_path, tmp_path / "nothing-here")
    assert code == 2
    _one_error(capsys, "no such file or folder")
    assert not out.exists()


def test_symlink_in_folder_is_refused(tmp_path, capsys):
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "policies.py").symlink_to("/etc/hostname")
    code, out = _grade(tmp_path, folder)
    assert code == 2
    _one_error(capsys, "'policies.py' is a symbolic link")
    assert not out.exists()


def test_report_path_that_is_a_folder(tmp_path, capsys, solution_bytes):
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "policies.py").write_bytes(solution_bytes)
    code = main(["grade", "--unit", "unit07", str(folder), "--json", str(tmp_path)])
    assert code == 2
    _one_error(capsys, "is a folder")


def test_nested_zip_is_graded_and_extras_reported(tmp_path, capsys, solution_bytes):
    sub = _zip(
        tmp_path / "sub.zip",
        {
            "infra-lab/policies.py": solution_bytes,
            "infra-lab/notes.md": b"my notes",
            "infra-lab/servesim/engine.py": b"raise SystemExit('tampered')",
            "__MACOSX/infra-lab/._policies.py": b"junk",
        },
    )
    code, out = _grade(tmp_path, sub, *SOLUTION_CASES)
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    assert report["score"] == report["maxScore"] > 0
    assert report["ignoredFiles"] == ["infra-lab/notes.md", "infra-lab/servesim/engine.py"]
    assert "ignored files" in capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    assert results["score"] == report["score"]


def test_grade_exits_zero_on_zero_score(tmp_path, unit):
    code, out = _grade(tmp_path, unit.lab_dir, "--case", "fcfs-mixed")
    assert code == 0
    assert json.loads((out / "report.json").read_text())["score"] == 0


def test_load_submission_reads_only_editable_files(tmp_path, solution_bytes):
    sub = _zip(tmp_path / "s.zip", {"policies.py": solution_bytes, "extra.py": b"x"})
    loaded = load_submission(sub, ("policies.py",))
    assert loaded.files == {"policies.py": solution_bytes}
    assert loaded.ignored == ["extra.py"]
    big = _zip(tmp_path / "big.zip", {"policies.py": b"#" * (2 * 1024 * 1024)})
    with pytest.raises(SubmissionError, match="larger than 1 MiB"):
        load_submission(big, ("policies.py",))


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"policy": "sjf"}, "unknown policy 'sjf'"),
        ({"points": 0}, "points must be a number > 0"),
        ({"visibility": "secret"}, "visibility must be 'public' or 'hidden'"),
        ({"params": {"chunk": 0}}, "parameter chunk must be an integer >= 1"),
        ({"id": "Bad Id"}, "id must be lower-case"),
        ({"transform": {"shiftMs": -2}}, "shiftMs must be a number >= 0"),
        ({"colour": "red"}, "unknown field 'colour'"),
    ],
)
def test_bad_case_specs(unit, change, needle):
    doc = json.loads(json.dumps(unit.doc))
    doc["grading"]["cases"][4].update(change)
    with pytest.raises(UnitError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        load_grading(Unit(unit.id, doc))


def test_duplicate_case_ids(unit):
    doc = json.loads(json.dumps(unit.doc))
    doc["grading"]["cases"].append(doc["grading"]["cases"][0])
    with pytest.raises(UnitError, match="duplicate id 'fcfs-mixed'"):
        load_grading(Unit(unit.id, doc))


def test_import_with_missing_csv_writes_nothing(tmp_path, capsys):
    out = tmp_path / "t.json"
    argv = ["trace", "import", "--unit", "unit07", "--azure", str(tmp_path / "none.csv")]
    assert main([*argv, "--duration", "1", "--scale", "10", "--output", str(out)]) == 2
    _one_error(capsys, "cannot read the CSV")
    assert not out.exists()


def test_child_that_cannot_start_is_a_grading_error(tmp_path, capsys, monkeypatch, unit):
    def broken(*args, **kwargs):
        raise OSError("bwrap: not found")

    monkeypatch.setattr("grader.grading.case_runs.run_cases", broken)
    code, out = _grade(tmp_path, unit.solutions_dir, "--case", "fcfs-mixed")
    assert code == 3  # the environment's failure, not the submission's: no score at all
    _one_error(capsys, "the sandbox could not run (bwrap: not found)")
    assert not out.exists()
