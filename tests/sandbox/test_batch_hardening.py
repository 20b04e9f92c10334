"""Batch grading against hostile submissions and changed inputs: correct submissions keep full
marks next to every adversarial one, reports are private and leak nothing, stale reports are
regraded, environment failures are retried error rows, CSV cells cannot be formulas."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from conftest import ADVERSARIAL

from grader.grading import cohort
from grader.grading.cohort_csv import neutralise
from grader.sandbox import Limits
from grader.units import Unit

CASES = ["fcfs-mixed", "fcfs-ties", "chunked-poisson-mix-chunk1-no-overhead"]
MAX = 8.0  # points of CASES
LIMITS = Limits(wall_s=5, submission_s=30, cpu_s=0.5, memory_mb=256, processes=32)


def _folder(root: Path, name: str, source: bytes) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "policies.py").write_bytes(source)
    return folder


def _rows(out: Path) -> dict[str, dict]:
    with (out / cohort.CSV_NAME).open(newline="") as handle:
        return {row["submission"]: row for row in csv.DictReader(handle)}


def test_adversarial_batch_leaves_correct_submissions_full_marks(unit, solution, tmp_path):
    subs = [_folder(tmp_path / "subs", p.stem, p.read_bytes()) for p in ADVERSARIAL.glob("*.py")]
    subs += [_folder(tmp_path / "subs", f"correct-{n}", solution) for n in range(4)]
    out = tmp_path / "out"
    result = cohort.grade_batch(unit, subs, out, jobs=2, cases=CASES, limits=LIMITS, progress=False)
    assert not result.failed and len(result.graded) == len(subs)
    rows = _rows(out)
    for n in range(4):
        assert float(rows[f"correct-{n}"]["score"]) == MAX
    assert oct(out.stat().st_mode & 0o777) == "0o700"
    hidden_names = [p.stem for p in (unit.traces_dir / "hidden").glob("*.json")]
    for report in (out / cohort.REPORTS).iterdir():
        assert report.stat().st_mode & 0o777 == 0o600
        text = report.read_text()
        assert "staffDetail" not in text and "fcfs-ties" not in text
        assert not [n for n in hidden_names if f"LEAK:{n}" in text]
    staff = json.loads((out / cohort.STAFF / "correct-0.json").read_text())
    assert {c["id"] for c in staff["cases"]} == set(CASES)
    assert all("staffDetail" in c for c in staff["cases"])


def test_stale_reports_are_regraded(unit, solution, tmp_path):
    sub = _folder(tmp_path / "subs", "late", (ADVERSARIAL / "stale_resubmission.py").read_bytes())
    out = tmp_path / "out"
    first = cohort.grade_batch(unit, [sub], out, cases=CASES[:2], progress=False)
    assert first.graded == ["late"] and float(_rows(out)["late"]["score"]) < 5
    (sub / "policies.py").write_bytes(solution)  # resubmitted: the hash changes
    second = cohort.grade_batch(unit, [sub], out, cases=CASES[:2], progress=False)
    assert second.graded == ["late"] and float(_rows(out)["late"]["score"]) == 5
    assert cohort.grade_batch(unit, [sub], out, cases=CASES[:2], progress=False).skipped == ["late"]
    doc = json.loads(json.dumps(unit.doc))  # the unit loses a case: other inputs
    doc["grading"]["cases"] = doc["grading"]["cases"][:-1]
    changed = cohort.grade_batch(Unit(unit.id, doc), [sub], out, cases=CASES[:2], progress=False)
    assert changed.graded == ["late"]


def test_environment_failures_are_retried_error_rows(unit, solution, tmp_path, monkeypatch):
    sub = _folder(tmp_path / "subs", "fine", solution)
    out = tmp_path / "out"

    def broken(*args, **kwargs):
        raise OSError("no space left on device")

    monkeypatch.setattr("grader.grading.case_runs.run_cases", broken)  # the workers are forked
    failed = cohort.grade_batch(unit, [sub], out, cases=CASES[:1], progress=False)
    assert failed.failed == ["fine"] and failed.errors == ["fine"]
    row = _rows(out)["fine"]
    assert row["score"] == "" and "no space left on device" in row["error"]
    monkeypatch.undo()
    again = cohort.grade_batch(unit, [sub], out, cases=CASES[:1], progress=False)
    assert again.graded == ["fine"] and not again.errors
    assert _rows(out)["fine"]["score"] == "2"


@pytest.mark.parametrize("name", ["@SUM(A1)", "-2+3", "+cmd", "=1+1"])
def test_csv_cells_cannot_be_formulas(unit, tmp_path, name):
    sub = tmp_path / "subs" / name
    sub.mkdir(parents=True)
    (sub / "notes.txt").write_text("no policies here\n")
    out = tmp_path / "out"
    cohort.grade_batch(unit, [sub], out, cases=CASES[:1], progress=False)
    first = (out / cohort.CSV_NAME).read_text().splitlines()[1].split(",")[0]
    assert first == neutralise(cohort.submission_name(sub))
    assert not first.startswith(("=", "+", "-", "@"))


def test_summary_counts_errors(unit, tmp_path, capsys):
    from grader.cli import main

    sub = tmp_path / "subs" / "empty"
    sub.mkdir(parents=True)
    shutil.copy(ADVERSARIAL / "empty_policies.py", sub / "readme.txt")
    out = tmp_path / "out"
    code = main(["grade", "--unit", unit.id, str(sub), "--out", str(out), "--case", CASES[0]])
    assert code == 0
    assert "errors 1 (of which 0 the grader's" in capsys.readouterr().out
