"""Units 07 and 09 have a leaderboard that compares students across variants: a goodput case on
a public trace each student draws, scored against the reference on the student's own trace
(docs/ta.md, "Leaderboards")."""

from __future__ import annotations

import pytest
from varianttools import variant_of

from grader.cases import Kind, load_grading
from grader.grading.grade import grade_submission
from grader.grading.inprocess import run_in_process
from grader.grading.leaderboard import LEADERBOARD_RELATIVE
from grader.grading.submission import Submission
from grader.units import load_unit
from grader.variants import drawn

UNITS = ["unit07", "unit09"]


def _board(unit, files: dict[str, bytes]) -> dict[str, float]:
    cases = [c.id for c in load_grading(unit).cases if c.kind is Kind.GOODPUT]
    report = grade_submission(unit, Submission(files), cases=cases, runner=run_in_process)
    return {entry["name"]: entry["value"] for entry in report.leaderboard() or []}


@pytest.mark.parametrize("unit_id", UNITS)
def test_the_leaderboard_case_is_public_and_on_a_trace_each_student_draws(unit_id):
    """Public: the leaderboard is shown whatever hidden_visibility says, and its figures
    (goodput in req/s, p99 TTFT) would tell of a hidden trace's times."""
    unit = load_unit(unit_id)
    cases = [c for c in load_grading(unit).cases if c.kind is Kind.GOODPUT]
    assert cases and not any(c.hidden for c in cases)
    assert all(c.trace in drawn.public_names(unit) for c in cases)


@pytest.mark.parametrize("unit_id", UNITS)
def test_the_reference_scores_100_percent_vs_reference_on_two_variants(unit_id):
    unit = load_unit(unit_id)
    reference = {n: (unit.solutions_dir / n).read_bytes() for n in unit.editable}
    one, two = variant_of(unit_id, "s001"), variant_of(unit_id, "s002")
    (case,) = [c for c in load_grading(unit).cases if c.kind is Kind.GOODPUT]
    path = f"traces/{case.trace}.json"
    assert (one.lab_dir / path).read_bytes() != (two.lab_dir / path).read_bytes()
    boards = [_board(variant, reference) for variant in (one, two)]
    assert [board.get(LEADERBOARD_RELATIVE) for board in boards] == [100.0, 100.0]


def test_a_slower_policy_scores_below_the_reference_on_the_leaderboard():
    """The column is not blind: unit 07's fcfs in place of chunked loses goodput under the
    case's TPOT bound (a prefill stalls every decode behind it)."""
    unit = variant_of("unit07", "s001")
    files = {n: (unit.solutions_dir / n).read_bytes() for n in unit.editable}
    slower = files["policies.py"] + b"\n\ndef chunked(view, chunk):\n    return fcfs(view)\n"
    board = _board(unit, {**files, "policies.py": slower})
    assert 0 < board[LEADERBOARD_RELATIVE] < 100.0
