"""Nothing a submission writes or names misleads the TA or stops the grader: escape sequences
in its output and file names are shown as escapes, refusals quote a bounded part of what they
name, and a folder nested too deep is refused in one line (docs/sandbox.md)."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
import zipfile

from grader.grading.grade import grade_submission
from grader.grading.submission import load_submission
from grader.units import REPO_ROOT

REDRAW = "\x1b[2J\x1b[H\x1b[32mTOTAL 100/100\x1b[0m\r\x07\u202e"


def test_nothing_a_submission_writes_or_names_redraws_the_graders_report(unit, solution, tmp_path):
    """A policy that raises with escape sequences, a carriage return, a bell and a
    bidirectional override in its message, in a submission holding a file named with them:
    the report a TA reads in a terminal shows them as escapes; what the grader prints itself
    keeps its newlines."""
    folder = tmp_path / "submission"
    folder.mkdir()
    raising = f"\n\ndef fcfs(view):\n    raise RuntimeError({REDRAW!r})\n"
    (folder / "policies.py").write_text(solution.decode() + raising)
    (folder / f"notes{REDRAW.replace('/', '-')}.txt").write_text("x")
    report = grade_submission(unit, load_submission(folder, unit.editable), cases=["fcfs-mixed"])
    text = report.text(staff=True)
    assert "RuntimeError: \\x1b[2J" in text and "\\u202e" in text, text
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", text), text
    assert text.count("\n") >= 4
    shown = "\n".join(t["output"] for t in report.to_gradescope()["tests"])  # a page shows these
    assert "RuntimeError: \\x1b[2J" in shown, shown
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", shown), shown


def test_no_zip_entry_name_redraws_what_the_grader_prints(tmp_path, solution):
    """A zip whose entry names hold escape sequences, carriage returns and a newline (two
    ``policies.py`` at one depth, so the refusal quotes them): ``infralab grade`` (one
    submission and a batch's ``scores.csv``) and ``infralab similarity`` print them as escapes,
    in one line. Before, the raw bytes reached the TA's terminal and the CSV cell."""
    zipped = tmp_path / "student.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("a/policies.py", solution)
        archive.writestr(f"{REDRAW.replace('/', '-')}\nTOTAL 59 - 59/policies.py", solution)
    cli = [sys.executable, "-m", "grader.cli"]
    one = subprocess.run([*cli, "grade", "--unit", "unit07", str(zipped)], **_TEXT)
    reference = str(REPO_ROOT / "solutions" / "unit07")
    batch = [*cli, "grade", "--unit", "unit07", "--out", str(tmp_path / "out")]
    many = subprocess.run([*batch, str(zipped), reference], **_TEXT)
    alike = [*cli, "similarity", "--unit", "unit07", "--out", str(tmp_path / "similar")]
    similar = subprocess.run([*alike, str(zipped), reference], **_TEXT)
    assert many.returncode == 0, many.stderr
    csv_text = (tmp_path / "out" / "scores.csv").read_text()
    for shown in (one.stderr, similar.stderr, csv_text):
        assert "\\x1b[2J" in shown and "\\nTOTAL" in shown, shown
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", shown), shown
    assert (one.returncode, similar.returncode, many.returncode) == (2, 2, 0)
    assert one.stderr.count("\n") == similar.stderr.count("\n") == 1
    assert csv_text.count("\n") == 3, csv_text  # the header and two rows


_TEXT = {"capture_output": True, "text": True, "timeout": 300}


def test_a_refusal_quotes_a_bounded_part_of_the_names(tmp_path):
    """A zip of 2,000 ``policies.py`` at one depth, each below a folder with a 1,000-character
    name: the refusal in a batch's ``scores.csv`` (a cell a spreadsheet must hold) and in the
    student's report lists three names and how many more, in at most 1,000 characters. Before,
    it listed every name: a 2 MB cell, rewritten with the CSV after every submission."""
    zipped = tmp_path / "student.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        for number in range(2000):
            archive.writestr(f"{number:04d}{'x' * 996}/policies.py", b"")
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "grader.cli", "grade", "--unit", "unit07", "--case"]
    argv += ["fcfs-mixed", str(zipped), str(REPO_ROOT / "solutions" / "unit07"), "--out", str(out)]
    done = subprocess.run(argv, **_TEXT)
    assert done.returncode == 0, done.stderr
    error = next(csv.DictReader((out / "scores.csv").open()))["error"]
    assert error.startswith(f"submission {zipped}: more than one policies.py (0000x"), error
    assert error.endswith("/policies.py and 1997 more)") and len(error) <= 1000, len(error)
    assert json.loads((out / "reports" / "student.json").read_text())["error"] == error


def test_a_deep_submission_folder_is_one_line_and_never_stops_a_batch(tmp_path, solution):
    """A submission folder 1,200 folders deep (the reference's ``policies.py`` on top, as an
    unpacked zip would hand it to the grader): ``infralab grade`` and ``infralab similarity``
    refuse it in one line, and a batch gives it a row of its own and grades the others. Before,
    the standard library's recursive walk raised ``RecursionError``: a traceback, and a batch
    stopped before grading anyone."""
    deep = tmp_path / "deep"
    deep.mkdir()
    (deep / "policies.py").write_bytes(solution)
    folders = [deep]
    for _ in range(1200):
        folders.append(folders[-1] / "a")
        folders[-1].mkdir()
    try:
        cli = [sys.executable, "-m", "grader.cli"]
        reference = str(REPO_ROOT / "solutions" / "unit07")
        grade = [*cli, "grade", "--unit", "unit07", "--case", "fcfs-mixed", str(deep)]
        one, batch = grade, [*grade, reference, "--out", str(tmp_path / "out")]
        alike = [*cli, "similarity", "--unit", "unit07", str(deep), reference]
        alike += ["--out", str(tmp_path / "similar")]
        runs = [subprocess.run(argv, **_TEXT) for argv in (one, batch, alike)]
    finally:  # the standard library's rmtree recurses too
        for folder in reversed(folders[1:]):
            folder.rmdir()
    refusal = f"infralab: error: submission {deep}: folders nested more than 32 deep\n"
    assert (runs[0].returncode, runs[0].stderr) == (2, refusal)
    assert (runs[2].returncode, runs[2].stderr) == (2, refusal)
    assert runs[1].returncode == 0, runs[1].stderr
    rows = (tmp_path / "out" / "scores.csv").read_text().splitlines()
    assert rows[1] == f"deep,0,,0,0,submission {deep}: folders nested more than 32 deep"
    assert rows[2].startswith("unit07,2,2,2,"), rows
