"""Shared fixtures for the repo tests (helpers live in labtools.py)."""

import pytest
from labtools import UNIT, copy_lab


@pytest.fixture(scope="session")
def unit():
    return UNIT


@pytest.fixture(scope="session")
def solved_lab(tmp_path_factory):
    return copy_lab(tmp_path_factory.mktemp("solved") / "lab", solution=True)
