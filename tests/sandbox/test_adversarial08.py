"""Unit 08 attack submissions (issue 20), graded end to end in every isolation mode this host
supports, each under a memory ceiling.

Each file of ``adversarial08/`` is appended to the reference's version of one editable file
(``APPENDS-TO:``), so whatever it does not attack is correct; ``CASES:`` names the cases (or
parts) it is graded on and ``EARNS:`` what an honest reading of it earns there: ``all``,
``none`` or ``all but PART...`` (those parts earn nothing); an optional ``REASON:`` is the check
that must stop it, quoted in the staff detail of every case it earns nothing on (so an attack
that merely crashes its own child cannot pass for one the grader stopped). Every attack must
earn exactly that, finish within ``WORST_CASE_S`` with the grading process's memory bounded, put
on the leaderboard only figures of the reference's verified runs (or goodput 0 for an invalid
run), and leave no hidden case's id, time or trace data in any student view.
"""

from __future__ import annotations

import json
import re

import pytest
from ceiling import under_ceiling
from conftest import ADVERSARIAL08

from grader.cases import load_grading
from grader.grading.grade import Status, grade_submission
from grader.grading.inprocess import run_in_process
from grader.grading.limits import limits_for
from grader.grading.submission import Submission
from grader.units import load_unit

UNIT = load_unit("unit08")
GRADING = load_grading(UNIT)
FILES = sorted(ADVERSARIAL08.glob("*.py"))
WORST_CASE_S = 120  # the bound for one attack, on a busy 2-core host
MEMORY_MB = 3072  # the grading process's address space ceiling above its start
PEAK_MB = 1024  # how far its resident memory may grow


def header(path, key: str) -> str:
    match = re.search(rf"^{key}: (.+)$", path.read_text(), re.MULTILINE)
    assert match, f"{path.name} has no {key}: line"
    return match.group(1).strip()


def case_ids(path) -> list[str]:
    words = header(path, "CASES").split()
    if words == ["all"]:
        return list(GRADING.ids)
    parts = set(GRADING.parts)
    return [c.id for c in GRADING.cases if c.id in words or (c.part in words and c.part in parts)]


def submission(path) -> Submission:
    files = {name: (UNIT.solutions_dir / name).read_bytes() for name in UNIT.editable}
    target = header(path, "APPENDS-TO")
    files[target] += b"\n\n" + path.read_bytes()
    return Submission(files, source=path.name)


def expected_score(path, ids: list[str]) -> float:
    earns = header(path, "EARNS").split()
    cases = [GRADING.by_id(i) for i in ids]
    if earns == ["none"]:
        return 0.0
    if earns == ["all"]:
        return sum(c.points for c in cases)
    assert earns[:2] == ["all", "but"], earns
    return sum(c.points for c in cases if c.part not in earns[2:])


@pytest.fixture(scope="module")
def reference_metrics():
    """The goodput cases' verified figures for the reference (trusted, in-process)."""
    ids = [c.id for c in GRADING.cases if c.kind.value == "goodput"]
    report = grade_submission(UNIT, UNIT.solutions_dir, cases=ids, runner=run_in_process)
    return {c.id: c.metrics for c in report.cases}


def student_views(report) -> list[str]:
    return [report.text(), json.dumps(report.to_json()), json.dumps(report.to_gradescope())]


def test_every_finding_has_an_attack():
    assert {p.stem for p in FILES} >= {
        "compact_forged_stats",
        "compact_string_ttft",
        "no_budget",
        "budget_overrun",
        "queue_cap_ignored",
        "quadratic_replay",
        "compact_expansion_bomb",
        "timing_channel",
        "constant_meets_slo",
    }


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_unit08_attack(path, mode08, reference_metrics):
    ids = case_ids(path)
    limits = limits_for(UNIT)
    (report, took), peak_mb = under_ceiling(
        lambda: _timed(lambda: grade_submission(UNIT, submission(path), cases=ids, limits=limits)),
        memory_mb=MEMORY_MB,
        timeout_s=WORST_CASE_S + 60,
    )
    assert took < WORST_CASE_S, f"{path.stem} held the grader {took:.1f} s"
    assert peak_mb < PEAK_MB, f"{path.stem}: the grading process grew by {peak_mb:.0f} MB"
    assert report.isolation.startswith(mode08)
    assert sorted(c.id for c in report.cases) == sorted(ids)  # reported in the handout's part order
    assert report.score == pytest.approx(expected_score(path, ids)), report.text(staff=True)
    reason = re.search(r"^REASON: (.+)$", path.read_text(), re.MULTILINE)
    for case in report.cases:
        if reason and case.points == 0:
            assert reason.group(1) in case.staff_detail, (case.id, case.staff_detail)
    for case in report.cases:
        if case.metrics:  # a goodput case: the reference's verified figures, or an invalid run
            if case.status is Status.PASSED:
                assert case.metrics == reference_metrics[case.id], case.id
            else:
                assert case.metrics["goodput"] == 0, (case.id, case.metrics)
    board = report.leaderboard() or []
    for entry in board:
        assert isinstance(entry["value"], float) and entry["value"] >= 0
        assert entry["value"] == float(f"{entry['value']:.3g}")
    shown = "\n".join(student_views(report))
    hidden = [c for c in report.cases if c.hidden]
    assert not [c.id for c in hidden if c.id in shown]
    assert "LEAK" not in shown and "staffDetail" not in shown
    assert "execution_time" not in shown
    student = report.to_json()
    assert "seconds" not in student
    assert all("seconds" not in c for c in student["cases"] if c["visibility"] == "hidden")


def _timed(call):
    import time

    started = time.monotonic()
    value = call()
    return value, time.monotonic() - started
