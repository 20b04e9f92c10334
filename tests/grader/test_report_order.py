"""Grader output lists parts in the handout's order, and its totals say what they count."""

from __future__ import annotations

from grader.cases import load_grading
from grader.course.points import points_table
from grader.grading.report import CaseResult, GradeReport, Status, Visibility
from grader.parts import unit_parts
from grader.units import load_unit


def _case(cid: str, part: str, points: float) -> CaseResult:
    return CaseResult(cid, part, points, 2.0, Visibility.PUBLIC, Status.PASSED, "")


def test_parts_follow_the_handouts_order_whatever_the_cases_order():
    report = GradeReport(
        unit="u",
        cases=[_case("c", "measure", 2), _case("b", "fair", 1), _case("a", "batching", 2)],
        isolation="none",
        part_labels={"batching": "part 1", "measure": "part 3", "fair": "part 4"},
    )
    assert list(report.parts) == ["batching", "measure", "fair"]
    assert list(report.to_json()["parts"]) == ["batching", "measure", "fair"]
    summary = report.text().splitlines()[1:4]
    assert [line.split(":")[0].strip() for line in summary] == ["part 1", "part 3", "part 4"]


def test_unit08_totals_agree_between_handout_grader_and_cases():
    unit = load_unit("unit08")
    table = points_table(unit)
    cases = sum(case.points for case in load_grading(unit).cases)
    assert table.cases_points == cases and table.total == cases + table.notebook_points
    assert table.notebook_points > 0  # the unit has a notebook, so the two totals differ
    total_row = table.markdown().splitlines()[-1]
    assert f"合计 {table.total:g} 分" in total_row and f"评分器 {cases:g} 分" in total_row
    assert f"total {table.total:g}: {cases:g} for the graded cases" in table.lines()[0]
    report = GradeReport(
        unit="unit08",
        cases=[_case("a", "batching", 2)],
        isolation="none",
        notebook_points=table.notebook_points,
        unit_total=table.total,
    )
    head = report.text().splitlines()[0]
    assert f"the handout's total is {table.total:g}" in head
    assert f"notebook's {table.notebook_points:g} points" in head
    assert [p.id for p in unit_parts(unit)][:3] == ["batching", "budgets", "measure"]
