"""Unit 09's public measure.py tests catch each common mistake: every mutant of
labs/unit09/mutants/measure/ (appended to the reference measure.py, as ``mutants_base:
reference`` builds it) fails at least one of starter/unit09/tests/test_measure*.py, and the
reference passes them all."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader.units import REPO_ROOT

SOLUTION = REPO_ROOT / "solutions" / "unit09" / "measure.py"
PUBLIC_TESTS = REPO_ROOT / "starter" / "unit09" / "tests"
MUTANTS = sorted((REPO_ROOT / "labs" / "unit09" / "mutants" / "measure").glob("*.py"))
TEST_FILES = [
    "conftest.py",
    "measurekit.py",
    *(p.name for p in PUBLIC_TESTS.glob("test_measure*.py")),
]


def public_tests_on(measure_source: bytes) -> subprocess.CompletedProcess:
    """The public measure tests run as a student runs them, in a lab-like folder holding
    ``measure_source`` as measure.py (deleted afterwards: it holds the solution)."""
    with tempfile.TemporaryDirectory(prefix="u09-mutant-") as folder:
        lab = Path(folder)
        (lab / "tests").mkdir()
        for name in TEST_FILES:
            shutil.copy(PUBLIC_TESTS / name, lab / "tests" / name)
        for name in ("tailruns.py", "tailruns.json"):
            shutil.copy(PUBLIC_TESTS.parent / name, lab / name)
        (lab / "measure.py").write_bytes(measure_source)
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "tests"],
            cwd=lab,
            capture_output=True,
            text=True,
            timeout=300,
        )


def test_reference_passes_the_public_measure_tests():
    result = public_tests_on(SOLUTION.read_bytes())
    assert result.returncode == 0, result.stdout[-3000:]


def test_every_mistake_has_a_mutant():
    assert len(MUTANTS) >= 10
    assert all(p.read_text(encoding="utf-8").startswith('"""Mutant: ') for p in MUTANTS)


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda p: p.stem)
def test_mutant_fails_a_public_test(mutant):
    source = SOLUTION.read_bytes() + b"\n\n# --- mutant ---\n" + mutant.read_bytes()
    result = public_tests_on(source)
    # 1: a test failed; 2 or more would be a collection error, which proves nothing
    assert result.returncode == 1, f"{mutant.stem} survives:\n{result.stdout[-3000:]}"
    assert "failed" in result.stdout
