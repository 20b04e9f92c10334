"""Shared fixtures for the sandbox tests: the unit, its solution, the isolation modes here."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from grader import sandbox
from grader.units import load_unit

ADVERSARIAL = Path(__file__).parent / "adversarial"


@pytest.fixture(scope="session")
def unit():
    return load_unit("unit07")


@pytest.fixture(scope="session")
def solution(unit) -> bytes:
    return (unit.solutions_dir / "policies.py").read_bytes()


def available_modes() -> list[str]:
    """The isolation modes this host can run ("rlimits" always; "bwrap" where it works)."""
    modes = ["rlimits"]
    if shutil.which("bwrap"):
        try:
            sandbox._plan("bwrap")
            modes.insert(0, "bwrap")
        except sandbox.SandboxError:
            pass
    return modes


@pytest.fixture(params=["bwrap", "rlimits"])
def mode(request, monkeypatch):
    """Run the test once per isolation mode (bwrap skipped where it cannot run)."""
    if request.param not in available_modes():
        pytest.skip("bubblewrap is not installed or cannot create namespaces on this host")
    monkeypatch.setenv(sandbox.MODE_ENV, request.param)
    return request.param


def as_root() -> bool:
    return os.geteuid() == 0
