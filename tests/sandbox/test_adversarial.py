"""Adversarial submissions graded end to end in the sandbox: each earns exactly what an honest
reading of its policy earns (0 for the cheats), grading goes on, and each case's feedback says
what happened in one line.

The expected score comes from the file's ``EARNS:`` line: ``none``, ``all``, a part name, or
``replay`` (a benign policy whose honest score is what the grader gives it when it runs
in-process, without any sandbox in the way).
"""

from __future__ import annotations

import re

import pytest
from conftest import ADVERSARIAL

from grader.cases import load_grading
from grader.grading import Status, grade_submission
from grader.inprocess import run_in_process
from grader.sandbox import Limits
from grader.submission import Submission

LIMITS = Limits(wall_s=10, cpu_s=0.5, memory_mb=256, processes=32)
FILES = sorted(ADVERSARIAL.glob("*.py"))
# What each file's cases must report (first feedback line), beyond the score.
EXPECT_STATUS = {
    "infinite_loop": {Status.TIMEOUT},
    "memory_bomb": {Status.CRASH},
    "exit_early": {Status.CRASH},
    "os_exit_in_policy": {Status.CRASH},
    "forged_run": {Status.INVALID_SCHEDULE},
    "invalid_batches": {Status.CRASH},
    "read_secrets": {Status.CRASH},
    "import_solutions": {Status.CRASH},
    "patch_engine": {Status.INVALID_SCHEDULE, Status.INCONSISTENT_STATS},
    "patch_clock": {Status.INVALID_SCHEDULE, Status.INCONSISTENT_STATS},
    "patch_metrics": {Status.INCONSISTENT_STATS, Status.INVALID_SCHEDULE},
}
FEEDBACK_WORDS = {
    "infinite_loop": "limit",
    "memory_bomb": "memory limit",
    "exit_early": "without writing its run file",
    "os_exit_in_policy": "without writing its run file",
    "invalid_batches": "rejected a batch",
    "read_secrets": "RuntimeError",
    "import_solutions": "ImportError",
}


def earns(path) -> str:
    match = re.search(r"^EARNS: (\S+)$", path.read_text(), re.MULTILINE)
    assert match, f"{path.name} has no EARNS: line"
    return match.group(1)


def test_the_suite_is_big_enough():
    assert len(FILES) >= 12


@pytest.fixture(scope="module")
def grading(unit):
    return load_grading(unit)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_adversarial_submission(unit, grading, path):
    files = {"policies.py": path.read_bytes()}
    report = grade_submission(unit, Submission(files), limits=LIMITS)
    tag = earns(path)
    if tag == "none":
        expected = 0.0
    elif tag == "all":
        expected = sum(c.points for c in grading.cases)
    elif tag == "replay":
        expected = grade_submission(unit, Submission(files), runner=run_in_process).score
    else:
        expected = sum(c.points for c in grading.cases if c.part == tag)
    assert report.score == pytest.approx(expected), report.text()
    assert len(report.cases) == len(grading.cases)  # grading went on through every case
    assert report.isolation and report.isolation != "none"
    for case in report.cases:
        first = case.feedback.splitlines()[0] if case.feedback else ""
        if case.status is Status.PASSED:
            continue
        assert first
        if path.stem in EXPECT_STATUS:
            assert case.status in EXPECT_STATUS[path.stem], (case.id, case.feedback)
        if path.stem in FEEDBACK_WORDS:
            assert FEEDBACK_WORDS[path.stem] in first, (case.id, first)
        if case.hidden:
            assert "\n" not in case.feedback
