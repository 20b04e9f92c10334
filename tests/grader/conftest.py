"""Shared fixtures for the grader tests. Grading runs child processes, so the expensive
reports are made once per session and reused."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.grading.grade import grade_submission
from grader.traces import mutants
from grader.units import Unit, load_unit


@pytest.fixture(scope="session")
def unit():
    return load_unit("unit07")


@pytest.fixture(scope="session")
def reference_report(unit):
    """The reference solution graded end to end (sandboxed children)."""
    return grade_submission(unit, unit.solutions_dir)


@pytest.fixture(scope="session")
def starter_report(unit):
    """The pristine starter folder graded end to end."""
    return grade_submission(unit, unit.lab_dir)


@pytest.fixture(scope="session")
def mutant_results(unit):
    """Every mutant on every case (in-process: the corpus is staff code)."""
    return {r.mutant.name: r for r in mutants.kill_matrix(unit)}


@dataclass(frozen=True)
class MovedUnit(Unit):
    """unit07 with its traces/ folder somewhere else (a scratch copy tests may change)."""

    root: Path = Path()

    @property
    def traces_dir(self) -> Path:
        return self.root


@pytest.fixture
def scratch_unit(unit, tmp_path):
    root = tmp_path / "traces"
    shutil.copytree(unit.traces_dir, root)
    return MovedUnit(unit.id, unit.doc, root=root)
