"""Shared setup for the real-device runner tests: the unit, a tiny model, the policies.

Tests that need PyTorch skip (with the reason) where it is not installed; install the project's
``runner`` extra (CPU build) to run them, as CI does.
"""

from __future__ import annotations

import pytest

from grader import reference
from grader.units import load_unit


@pytest.fixture(scope="session")
def unit():
    return load_unit("unit07")


@pytest.fixture(scope="session")
def solution(unit):
    return reference.solution_policies(unit)


@pytest.fixture(scope="session")
def torch_cpu(unit):
    torch = pytest.importorskip("torch", reason="PyTorch not installed (extra 'runner')")
    torch.set_num_threads(1)
    return torch
