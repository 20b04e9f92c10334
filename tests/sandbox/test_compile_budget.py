"""Finding 5 of issue 31: compiling a submission's files is part of the case.

The runner compiles each submission file once, in a forked process with ``Limits.compile_s``
CPU seconds. A ``measure.py`` that carries a never-executed 1 MiB f-string (its compiling is
quadratic: minutes of CPU) must not make the policy cases fail or stall: they earn what they
honestly earn, and only the cases that import ``measure.py`` fail, with feedback naming the
file. (How long the grading takes against the reference's: ``benchmarks/compile_bomb.py``.)
"""

from __future__ import annotations

import pytest

from grader.grading.grade import Status, grade_submission
from grader.grading.limits import limits_for
from grader.grading.submission import Submission
from grader.units import load_unit

UNIT = load_unit("unit08")
POLICY_CASES = ["paged-unseen", "static-steady-k4", "budgeted-deadlines-b128"]
MEASURE_CASES = ["measure-tpot-steady", "measure-interval-90"]
BOMB_BYTES = 1 << 20


def compile_bomb(size: int = BOMB_BYTES) -> bytes:
    """A function that is never called, returning an f-string of ``size`` bytes of fields."""
    return b'\n\ndef _never_called():\n    return f"' + b"{0}" * (size // 3) + b'"\n'


def reference_files() -> dict[str, bytes]:
    return {name: (UNIT.solutions_dir / name).read_bytes() for name in UNIT.editable}


def test_the_cases_compile_bomb_is_what_the_finding_describes():
    bomb = compile_bomb()
    assert len(bomb) >= BOMB_BYTES - 3
    compile(compile_bomb(3000), "measure.py", "exec")  # valid Python: only slow to compile


def test_a_compile_bomb_in_measure_py_fails_only_the_measure_cases(mode08):
    files = reference_files()
    files["measure.py"] += compile_bomb()
    report = grade_submission(
        UNIT,
        Submission(files, source="compile bomb"),
        cases=POLICY_CASES + MEASURE_CASES,
        limits=limits_for(UNIT),
    )
    by_id = {c.id: c for c in report.cases}
    for case_id in POLICY_CASES:
        assert by_id[case_id].status is Status.PASSED, by_id[case_id].feedback
    for case_id in MEASURE_CASES:
        case = by_id[case_id]
        assert case.status is Status.TIMEOUT and case.points == 0, case.feedback
        assert "measure.py did not compile within the" in case.feedback
        assert "measure.py did not compile within the 2 s compile budget" in case.staff_detail
    assert report.score == sum(by_id[c].max_points for c in POLICY_CASES)


@pytest.mark.parametrize("broken", [b"\ndef broken(:\n", b"\nx = 'never closed\n"])
def test_a_file_that_does_not_compile_still_shows_its_syntax_error(mode08, broken):
    files = reference_files()
    files["measure.py"] += broken
    report = grade_submission(
        UNIT,
        Submission(files, source="syntax error"),
        cases=["paged-unseen", "measure-interval-90"],
        limits=limits_for(UNIT),
    )
    policy, measure = report.cases
    assert policy.status is Status.PASSED
    assert measure.status is Status.CRASH
    assert "SyntaxError" in measure.staff_detail and "compile budget" not in measure.staff_detail
