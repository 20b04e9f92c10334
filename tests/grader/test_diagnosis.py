"""Diagnosing feedback (grader/diagnosis): each catalogue entry's text reaches the student on a
hidden case failed by the mutants it names, with no id, time or size of the hidden trace in it;
every mutant of every unit either fails a public test of its lab or is named by an entry; text a
submission forges or answers it bends can only pick one of the fixed texts."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from labtools import copy_lab

from grader import diagnosis
from grader.cases import load_grading
from grader.grading.grade import grade_submission
from grader.grading.inprocess import run_in_process
from grader.grading.submission import Submission
from grader.sandbox import ChildResult
from grader.traces.mutants import list_mutants
from grader.units import UnitError, load_unit

UNITS = {uid: load_unit(uid) for uid in ("unit07", "unit08", "unit09")}


def _named() -> list[tuple[str, str, str]]:
    return [
        (uid, entry.id, mutant)
        for uid, unit in UNITS.items()
        for entry in diagnosis.load_catalogue(unit).entries
        for mutant in entry.mutants
    ]


NAMED = _named()


def _unnamed() -> list[tuple[str, str]]:
    named = {(uid, mutant) for uid, _, mutant in NAMED}
    return [
        (uid, m.name)
        for uid, unit in UNITS.items()
        for m in list_mutants(unit)
        if (uid, m.name) not in named
    ]


def assert_student_safe(feedback: str) -> None:
    """Nothing numeric (ids, times, sizes, counts) in what a hidden case shows."""
    assert not re.search(r"\d", feedback), feedback


def test_every_entry_names_a_mutant_and_every_mutant_is_checked_one_way():
    for uid, unit in UNITS.items():
        entries = diagnosis.load_catalogue(unit).entries
        assert entries and all(e.mutants for e in entries), uid
    checked = {(uid, m) for uid, _, m in NAMED} | set(_unnamed())
    every = {(uid, m.name) for uid, unit in UNITS.items() for m in list_mutants(unit)}
    assert checked == every


@pytest.mark.parametrize(("unit_id", "entry_id", "mutant_name"), NAMED)
def test_entry_text_reaches_the_student_on_a_hidden_case(unit_id, entry_id, mutant_name):
    unit = UNITS[unit_id]
    entry = next(e for e in diagnosis.load_catalogue(unit).entries if e.id == entry_id)
    mutant = next(m for m in list_mutants(unit) if m.name == mutant_name)
    cases = [
        c
        for c in load_grading(unit).cases
        if c.hidden and diagnosis.case_function(unit, c) in entry.functions
    ]
    assert cases, entry_id
    shown = []
    for case in cases:  # one case at a time: stop at the first that shows the entry
        report = grade_submission(
            unit, mutant.submission(unit), cases=[case.id], runner=run_in_process
        )
        (result,) = report.cases
        assert_student_safe(result.feedback)
        if result.points < result.max_points:
            shown.append(result.feedback)
            if f"{diagnosis.subject(unit, case)}: {entry.text}" in result.feedback:
                assert f"diagnosis: {entry.id}" in result.staff_detail
                return
    pytest.fail(f"{mutant_name} never gets '{entry.id}'; it got: {shown}")


@pytest.mark.parametrize(("unit_id", "mutant_name"), _unnamed())
def test_mutant_without_entry_fails_a_public_test(tmp_path, unit_id, mutant_name):
    unit = UNITS[unit_id]
    mutant = next(m for m in list_mutants(unit) if m.name == mutant_name)
    lab = copy_lab(tmp_path / "lab", True, unit)
    for name, data in mutant.submission(unit).files.items():
        (lab / name).write_bytes(data)
    done = subprocess.run(
        [sys.executable, "-I", "-S", "run_tests.py"],
        cwd=lab,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1 and "FAILED" in done.stdout, done.stdout[-2000:]


# --- what a submission controls cannot carry numbers out ---

UNIT08 = UNITS["unit08"]


def _case(case_id: str):
    return next(c for c in load_grading(UNIT08).cases if c.id == case_id)


@pytest.mark.parametrize(
    "line",
    [
        "simulate.py: error: policy paged: batch at 1234.50 ms: 777 new positions, token budget 31",
        "simulate.py: error: policy paged: decode of 'kx42' at 9.00 ms: it is not running",
        "simulate.py: error: policy paged: anything at all 4242 ms",
    ],
)
def test_a_forged_engine_error_picks_a_fixed_text_at_most(line):
    from grader.grading.child_exit import how_it_ended
    from grader.grading.judge import _named
    from grader.grading.verdict import Verdict

    case = _case("paged-kv-b512-m96")
    child = ChildResult(1, "", f"Traceback...\n{line}\n", False, None, "test")
    verdict = _named(UNIT08, case, how_it_ended(UNIT08, case, child))
    assert isinstance(verdict, Verdict)
    assert verdict.hidden_text().startswith("crash: paged() in policies.py: ")
    assert_student_safe(verdict.hidden_text())


def test_a_submission_printing_an_engine_error_gets_no_number_back():
    forged = b"""

import sys


def paged(view, budget):
    print("simulate.py: error: policy paged: batch at 12.5 ms: 99 new positions, token budget 7",
          file=sys.stderr)
    sys.exit(2)
"""
    files = {name: (UNIT08.solutions_dir / name).read_bytes() for name in UNIT08.editable}
    files["policies.py"] += forged
    report = grade_submission(
        UNIT08,
        Submission(files, source="test"),
        cases=["paged-kv-b512-m96"],
        runner=run_in_process,
    )
    (result,) = report.cases
    assert result.points == 0
    assert "paged() in policies.py" in result.feedback
    assert_student_safe(result.feedback)


@pytest.mark.parametrize(
    "answers",
    [
        None,
        "x" * 500,
        [{"submitted": 10**9, "attainment_over_submitted": float("nan")}],
        [[1, 2], {"a": [3]}],
        [1e308, -1e308, 17, "kx5"],
    ],
)
def test_bent_answers_get_a_fixed_text(answers):
    from grader.course.golden import golden_path
    from grader.grading.scoring import answers as judge_answers

    for case_id in ("measure-goodput-deadlines", "measure-tpot-steady"):
        case = _case(case_id)
        golden = __import__("json").loads(golden_path(UNIT08, case).read_text(encoding="utf-8"))
        verdict = judge_answers(UNIT08, case, golden, {"answers": answers})
        assert verdict.summary.startswith(diagnosis.subject(UNIT08, case))
        assert_student_safe(verdict.hidden_text())


def test_a_catalogue_text_with_a_digit_is_refused(tmp_path):
    from grader.diagnosis.catalogue import _load

    text = (
        "kinds:\n  - {id: x, check: later-started-first, functions: [paged],"
        " text: 'request kx5 at 3 ms', mutant: preempts_oldest}\n"
    )
    with pytest.raises(UnitError, match="no digit"):
        _load("diagnoses.yaml", text, UNIT08)
    for bad, match in [
        ("check: nonsense", "unknown check"),
        ("mutant: no_such_mutant", "not a file"),
        ("functions: [nobody]", "functions must list"),
    ]:
        key = bad.split(":")[0]
        line = re.sub(rf"{key}: [^,}}]+", bad, text.replace("request kx5 at 3 ms", "ok"))
        with pytest.raises(UnitError, match=match):
            _load("diagnoses.yaml", line, UNIT08)


@pytest.mark.parametrize(
    "line",
    [
        "batch at 3.00 ms: 'a' needs 70 KV pages, budget 64",
        "batch at 151.40 ms: 'c05' needs 8 more KV pages, 4 free",  # a prefix cache's pool
    ],
)
def test_both_page_pool_refusals_are_named(line):
    from grader.diagnosis.rejections import rejection

    assert rejection(f"simulate.py: error: {line}\n") == "rejected-kv-pages"
    assert rejection(f"simulate.py: error: {line} and more\n") is None
