"""Batch grading: parallel, one report per submission, resumable, SIGINT loses nothing."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ADVERSARIAL

from grader.grading import cohort

CASES = ["fcfs-mixed", "chunked-mixed", "fcfs-mixed-relabelled", "chunked-mixed-relabelled"]
PAUSED_BATCH = Path(__file__).parent / "paused_batch.py"
KINDS = ["solution", "raise_in_chunked", "exit_early", "invalid_batches", "empty"]


def make_submissions(root: Path, unit, count: int) -> list[Path]:
    """``count`` submission folders cycling through correct, wrong, crashing and broken."""
    paths = []
    for n in range(count):
        kind = KINDS[n % len(KINDS)]
        folder = root / f"s{n:02d}-{kind}"
        folder.mkdir(parents=True)
        if kind == "solution":
            shutil.copy(unit.solutions_dir / "policies.py", folder / "policies.py")
        elif kind == "empty":
            (folder / "notes.txt").write_text("forgot the code\n")
        else:
            shutil.copy(ADVERSARIAL / f"{kind}.py", folder / "policies.py")
        paths.append(folder)
    return paths


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "grader.cli", "grade", "--unit", "unit07", *args]


def case_flags() -> list[str]:
    return [flag for case in CASES for flag in ("--case", case)]


def test_batch_scores_rerun_and_broken_submissions(unit, tmp_path):
    subs = make_submissions(tmp_path / "subs", unit, 5)
    out = tmp_path / "out"
    done = []
    result = cohort.grade_batch(
        unit, subs, out, jobs=2, cases=CASES, progress=False, on_done=done.append
    )
    assert sorted(result.graded) == sorted(p.name for p in subs) == sorted(done)
    assert not result.failed and not result.interrupted
    rows = (out / "scores.csv").read_text().splitlines()
    assert rows[0] == "submission,score,max_score,fcfs,chunked,error"
    by_name = {row.split(",")[0]: row.split(",") for row in rows[1:]}
    assert by_name["s00-solution"][1:4] == ["8", "8", "4"]
    assert by_name["s01-raise_in_chunked"][1:5] == ["4", "8", "4", "0"]
    assert by_name["s02-exit_early"][1] == "0"
    assert "none of the editable files" in by_name["s04-empty"][-1]
    assert sorted(p.name for p in (out / "reports").iterdir()) == sorted(
        f"{p.name}.json" for p in subs
    )
    again = cohort.grade_batch(unit, subs, out, jobs=2, cases=CASES, progress=False)
    assert again.graded == [] and sorted(again.skipped) == sorted(p.name for p in subs)
    forced = cohort.grade_batch(unit, subs[:1], out, force=True, cases=CASES, progress=False)
    assert forced.graded == ["s00-solution"]


def test_duplicate_names_are_one_clear_error(unit, tmp_path):
    a, b = tmp_path / "a" / "x", tmp_path / "b" / "x"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    with pytest.raises(cohort.BatchError, match="both named 'x'"):
        cohort.grade_batch(unit, [a, b], tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_sigint_midway_then_rerun_gives_the_same_csv(unit, tmp_path):
    """Ctrl-C in the middle of a batch keeps every finished report and nothing half-written,
    and a rerun grades the rest into the same CSV as an uninterrupted run. The interrupt comes
    at a known point (``paused_batch.py``: the batch waits after 3 graded submissions), not
    after a guess at how fast the grader is."""
    subs = [str(p) for p in make_submissions(tmp_path / "subs", unit, 10)]
    jobs, after = 2, 3
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    grade_args = [*subs, "--unit", "unit07", "--jobs", str(jobs), *case_flags()]

    def grade_all(out: Path) -> subprocess.CompletedProcess:
        argv = cli(*subs, "--out", str(out), "--jobs", str(jobs), *case_flags())
        return subprocess.run(
            argv, capture_output=True, text=True, env=env, check=False, timeout=300
        )

    whole = tmp_path / "whole"
    done = grade_all(whole)
    assert done.returncode == 0, done.stderr

    cut, paused, log = tmp_path / "cut", tmp_path / "paused", tmp_path / "cut.log"
    command = [sys.executable, str(PAUSED_BATCH), str(after), str(paused), *grade_args]
    with open(log, "w") as output:  # a file, not a pipe: nothing can block the batch's writes
        child = subprocess.Popen(
            [*command, "--out", str(cut)],
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group, like a job in a terminal
        )
    try:
        deadline = time.monotonic() + 240  # a bound for a broken grader, not a speed guess
        while not paused.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert paused.exists(), log.read_text()[-3000:]
        os.killpg(child.pid, signal.SIGINT)  # what Ctrl-C does
        try:
            child.wait(timeout=60)  # a bound for a batch that ignores Ctrl-C
        except subprocess.TimeoutExpired:
            pytest.fail("the batch did not end after SIGINT:\n" + log.read_text()[-3000:])
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert child.returncode == 130, log.read_text()[-3000:]
    reports = cut / "reports"
    finished = sorted(reports.glob("*.json"))
    assert after <= len(finished) <= after + jobs - 1  # those running at the pause may finish
    assert not [p for p in reports.iterdir() if p.suffix != ".json"]  # no half-written files
    csv_lines = (cut / "scores.csv").read_text().splitlines()
    assert len(csv_lines) == 1 + len(finished)

    rerun = grade_all(cut)
    assert rerun.returncode == 0, rerun.stderr
    assert f"skipped {len(finished)}" in rerun.stdout
    assert (cut / "scores.csv").read_bytes() == (whole / "scores.csv").read_bytes()


def test_a_worker_killed_mid_grading_becomes_an_error_row(unit, tmp_path, monkeypatch):
    """A worker that dies while it grades a submission (here SIGKILL after its cases ran, as
    the kernel's OOM killer would send it): the batch finishes, that submission gets an error
    row retried on the next run, the others their scores."""
    from grader.grading import grade

    subs = make_submissions(tmp_path / "subs", unit, 3)
    victim = subs[1].name
    real_grade, real_judge = grade.grade_submission, grade.judge_cases
    current = {}  # per worker process: the submission it grades

    def grading(unit_id, source, **kwargs):
        current["name"] = Path(source).name
        return real_grade(unit_id, source, **kwargs)

    def dies_while_judging(unit_, jobs, limits=None):
        if current.get("name") == victim:
            os.kill(os.getpid(), signal.SIGKILL)
        return real_judge(unit_, jobs, limits)

    monkeypatch.setattr(grade, "grade_submission", grading)
    monkeypatch.setattr(grade, "judge_cases", dies_while_judging)
    out = tmp_path / "out"
    started = time.monotonic()
    result = cohort.grade_batch(unit, subs, out, jobs=2, cases=CASES[:2], progress=False)
    assert time.monotonic() - started < 120
    assert result.failed == [victim]
    assert sorted(result.graded) == sorted(p.name for p in subs if p.name != victim)
    rows = {r.split(",")[0]: r.split(",") for r in (out / "scores.csv").read_text().splitlines()}
    assert rows[victim][1] == "" and "killed (SIGKILL)" in rows[victim][-1]
    assert rows[subs[0].name][1] == "4"
    monkeypatch.setattr(grade, "judge_cases", real_judge)
    again = cohort.grade_batch(unit, subs, out, jobs=2, cases=CASES[:2], progress=False)
    assert again.graded == [victim] and not again.failed  # retried, and graded this time
