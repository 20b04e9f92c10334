"""Shared fixtures for the repo tests (helpers live in labtools.py).

``scripts/test.sh`` runs the suite in two passes: every test not marked ``serial`` on all cores
(pytest-xdist), then the ``serial`` ones one at a time. A test is ``serial`` when it cannot share
the machine (it changes something other tests read, or it measures time), and says why.
"""

import os
import shutil
import tempfile

import pytest
from labtools import UNIT, copy_lab

from grader.checkcache import CACHE_ENV

_OWN_CACHE: list[str] = []


def pytest_configure(config):
    """unit.yaml's cache (``grader.checkcache``) in a folder of this run, not the user's."""
    if not os.environ.get(CACHE_ENV):  # xdist workers inherit the controller's
        _OWN_CACHE.append(tempfile.mkdtemp(prefix="infralab-test-cache-"))
        os.environ[CACHE_ENV] = _OWN_CACHE[0]


def pytest_unconfigure(config):
    for folder in _OWN_CACHE:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    for item in items:
        mark = item.get_closest_marker("serial")
        if mark is not None and not mark.kwargs.get("reason"):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.serial needs reason=...")


@pytest.fixture(scope="session")
def unit():
    return UNIT


@pytest.fixture(scope="session")
def solved_lab(tmp_path_factory):
    return copy_lab(tmp_path_factory.mktemp("solved") / "lab", solution=True)
