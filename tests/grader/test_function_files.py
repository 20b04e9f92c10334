"""Feedback names the file a function lives in (issue 47): every function of every unit's parts,
and every function a graded case tests, is defined at top level in the file that the unit and
the feedback name, in the lab folder and in the solutions. No case falls back to a guessed file.
"""

from __future__ import annotations

import ast

import pytest

from grader.cases import load_grading
from grader.diagnosis import catalogue, subject
from grader.parts import unit_parts
from grader.units import UnitError, load_unit, unit_ids

UNITS = unit_ids()


def defined(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize("unit_id", UNITS)
def test_every_part_function_lives_in_the_file_the_part_names(unit_id):
    unit = load_unit(unit_id)
    for part in unit_parts(unit):
        for item in part.functions:
            filename, name = item.split(":", 1)
            assert filename in unit.editable, item
            for folder in (unit.lab_dir, unit.solutions_dir):
                assert name in defined(folder / filename), f"{unit_id}: {item} in {folder}"


@pytest.mark.parametrize("unit_id", UNITS)
def test_every_case_names_the_file_its_function_lives_in(unit_id):
    unit = load_unit(unit_id)
    for case in load_grading(unit).cases:
        function = catalogue.case_function(unit, case)
        filename = subject(unit, case).rsplit(" in ", 1)[1]
        for folder in (unit.lab_dir, unit.solutions_dir):
            assert function in defined(folder / filename), f"{case.id}: {subject(unit, case)}"


def test_evidence_is_named_in_measure_py():
    unit = load_unit("unit09")
    case = load_grading(unit).by_id("measure-evidence-mixed-slow")
    assert subject(unit, case) == "evidence() in measure.py"


def test_a_function_no_file_defines_is_refused_not_guessed():
    unit = load_unit("unit09")
    with pytest.raises(UnitError, match="'no_such_function'"):
        catalogue.function_file(unit, "no_such_function")
