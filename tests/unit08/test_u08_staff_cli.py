"""The staff CLI works for unit 08 as for unit 07: simulate --reference, starter sync, golden,
grade."""

import json
import subprocess
import sys

from u08tools import UNIT08

from grader.cases import load_grading
from grader.units import REPO_ROOT


def infralab(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "grader.cli", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_simulate_reference_runs_unit08(tmp_path):
    out = tmp_path / "run.json"
    profile = UNIT08.lab_dir / "devices" / "kv-64-pages.json"
    done = infralab(
        "simulate",
        "--unit",
        "unit08",
        "--reference",
        "--trace",
        "kv-pages",
        "--device-profile",
        str(profile),
        "--policy",
        "paged",
        "--output",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    assert "paged(budget=512): 3 completed, 1 rejected, 0 cancelled" in done.stdout
    statuses = {r["id"]: r["status"] for r in json.loads(out.read_text())["runs"][0]["requests"]}
    assert statuses == {"X": "completed", "Y": "completed", "Z": "completed", "W": "rejected"}


def test_starter_sync_and_golden_checks_pass():
    for args in (
        ("starter", "sync", "--unit", "unit08", "--check"),
        ("golden", "--unit", "unit08", "--check"),
    ):
        done = infralab(*args)
        assert done.returncode == 0, f"{args}: {done.stdout}{done.stderr}"


def test_grade_gives_the_reference_full_points(tmp_path):
    submission = tmp_path / "submission"
    submission.mkdir()
    for name in UNIT08.editable:
        (submission / name).write_text((UNIT08.solutions_dir / name).read_text())
    report = tmp_path / "report.json"
    done = infralab("grade", "--unit", "unit08", str(submission), "--json", str(report))
    assert done.returncode == 0, done.stdout + done.stderr
    most = sum(case.points for case in load_grading(UNIT08).cases)
    assert f"unit08: {most:g} / {most:g} points" in done.stdout
