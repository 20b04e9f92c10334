"""Shared fixtures for the sandbox tests: the unit, its solution, the isolation modes here."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from grader import sandbox
from grader.grading.limits import unit_material
from grader.units import REPO_ROOT, load_unit

ADVERSARIAL = Path(__file__).parent / "adversarial"
ADVERSARIAL08 = Path(__file__).parent / "adversarial08"


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


# The rlimits mode makes the repo's hidden traces and solutions private while a test runs
# (chmod): ``private_material`` holds a lock across xdist workers for that time, so those tests
# run one at a time whatever the scheduler does (pytest 9 ignores xdist's groups), and tests
# that need the repo readable by other users are `serial`.
MATERIAL_LOCK = REPO_ROOT / ".pytest_cache" / "rlimits-private-material.lock"


@pytest.fixture(params=["bwrap", "rlimits"])
def mode(request, monkeypatch, unit):
    """Run the test once per isolation mode the host supports: bwrap where it works; rlimits
    only as root (a dedicated uid), with the unit's hidden material made private for the test
    as the grader requires (without root, that mode is refused: see test_weak_modes)."""
    yield from _in_mode(request.param, monkeypatch, unit)


@pytest.fixture(params=["bwrap", "rlimits"])
def mode08(request, monkeypatch):
    """``mode`` for unit 08's material."""
    yield from _in_mode(request.param, monkeypatch, load_unit("unit08"))


def _in_mode(name: str, monkeypatch, unit):
    if name not in available_modes():
        pytest.skip("bubblewrap is not installed or cannot create namespaces on this host")
    if name == "rlimits" and not as_root():
        pytest.skip("the rlimits mode needs root (a dedicated uid); it is refused otherwise")
    monkeypatch.setenv(sandbox.MODE_ENV, name)
    if name == "rlimits":
        with private_material(unit):
            yield name
    else:
        yield name


@contextlib.contextmanager
def private_material(unit):
    """The unit's hidden material (``unit_material``) unreachable by other users, with
    the lock held that keeps every other test process from doing the same meanwhile."""
    MATERIAL_LOCK.parent.mkdir(exist_ok=True)
    with open(MATERIAL_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        with _private(unit):
            yield


@contextlib.contextmanager
def _private(unit):
    folders = [p for p in dict.fromkeys(unit_material(unit)) if p.exists()]
    modes = {p: p.stat().st_mode & 0o7777 for p in folders}
    try:
        for folder in folders:
            folder.chmod(modes[folder] & ~0o007)
        yield
    finally:  # give back only the bits taken, so overlapping uses cannot leave them private
        for folder, old in modes.items():
            folder.chmod(folder.stat().st_mode & 0o7777 | old & 0o007)


def as_root() -> bool:
    return os.geteuid() == 0


@pytest.fixture
def open_tmp():
    """A temp folder every user can enter (0755, below the system's temp folder): pytest's own
    ``tmp_path`` lies below a folder only its owner may enter, so a test that needs a place
    other users reach would otherwise depend on the host."""
    folder = Path(tempfile.mkdtemp(prefix="infralab-open-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


CODE_PACKAGES = ("grader", "servesim", "realdevice")


def readable_code(dest: Path) -> Path:
    """The staff packages copied into ``dest`` (made, 0755, files as in the checkout): what a
    grader started as an unprivileged user imports, so that such a test does not depend on
    whether that user can enter the checkout (a clone under /root, say). No hidden material."""
    dest.mkdir(mode=0o755)
    dest.chmod(0o755)
    for name in CODE_PACKAGES:
        shutil.copytree(REPO_ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest
