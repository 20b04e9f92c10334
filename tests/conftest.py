"""Shared fixtures for the repo tests (helpers live in labtools.py).

``scripts/test.sh`` runs the suite in two passes: every test not marked ``serial`` on all cores
(pytest-xdist), then the ``serial`` ones one at a time. A test is ``serial`` when it cannot share
the machine (it changes something other tests read, or it measures time), and says why.
"""

import os
import shutil
import signal
import tempfile

import pytest
from fasttier import is_fast
from labtools import UNIT, copy_lab

from grader.checkcache import CACHE_ENV
from grader.variants.store import CACHE_ENV as VARIANT_CACHE_ENV

_OWN_CACHE: list[str] = []


def pytest_configure(config):
    """unit.yaml's cache (``grader.checkcache``) and the variants' cache
    (``grader.variants.store``) in folders of this run, not the user's or the course's."""
    for env, prefix in ((CACHE_ENV, "infralab-test-cache-"), (VARIANT_CACHE_ENV, "infralab-var-")):
        if not os.environ.get(env):  # xdist workers inherit the controller's
            _OWN_CACHE.append(tempfile.mkdtemp(prefix=prefix))
            os.environ[env] = _OWN_CACHE[-1]


@pytest.fixture(autouse=True)
def _signals_left_as_found():
    """Fail a test that leaves SIGINT or SIGTERM ignored or blocked in this process where it
    found them not (restoring them first). Both survive ``exec``: every process a later test
    starts in this worker would inherit them, and a test that interrupts a batch with Ctrl-C
    would wait in vain. (A Python handler does not survive ``exec``: not checked.)"""
    before = _exec_inherited_signals()
    yield
    after = _exec_inherited_signals()
    if after != before:
        for sig, ignored in before[0].items():
            if ignored:
                signal.signal(sig, signal.SIG_IGN)
            elif after[0][sig]:
                signal.signal(
                    sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
                )
        signal.pthread_sigmask(signal.SIG_SETMASK, before[1])
        pytest.fail(f"the test left signals ignored or blocked: {before} -> {after}")


def _exec_inherited_signals() -> tuple[dict, set]:
    ignored = {s: signal.getsignal(s) is signal.SIG_IGN for s in (signal.SIGINT, signal.SIGTERM)}
    return ignored, signal.pthread_sigmask(signal.SIG_BLOCK, [])


def pytest_unconfigure(config):
    for folder in _OWN_CACHE:
        shutil.rmtree(folder, ignore_errors=True)


# The files whose tests take longest (pytest --durations), longest first. They run first, so that
# no worker is left with one of them while the other has nothing to do; pytest-xdist hands out
# tests in this order (after its groups, which go first, the largest first).
LONGEST_FIRST = (
    "tests/nbgrader/test_answer_keys_unit08.py",
    "tests/unit08/test_u08_hidden_grading.py",
    "tests/sandbox/test_adversarial08.py",
    "tests/site/test_accessibility.py",
    "tests/sandbox/test_adversarial.py",
    "tests/grader/test_fastpath_paged.py",
    "tests/grader/test_diagnosis.py",
    "tests/site/test_browser.py",
    "tests/unit08/test_u08_protocol.py",
    "tests/test_run_tests.py",
    "tests/unit08/test_u08_staff_cli.py",
    "tests/site/test_browser_unit08.py",
    "tests/sandbox/test_release.py",
    "tests/sandbox/test_batch_hardening.py",
)


def _rank(item) -> int:
    path = item.nodeid.split("::")[0]
    return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(config, items):
    for item in items:
        mark = item.get_closest_marker("serial")
        if mark is not None and not mark.kwargs.get("reason"):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.serial needs reason=...")
        if is_fast(item.nodeid):
            item.add_marker(pytest.mark.fast)
    items.sort(key=_rank)  # stable: the rest keep their order


@pytest.fixture(scope="session")
def unit():
    return UNIT


@pytest.fixture(scope="session")
def solved_lab(tmp_path_factory):
    return copy_lab(tmp_path_factory.mktemp("solved") / "lab", solution=True)
