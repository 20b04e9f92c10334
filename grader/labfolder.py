"""A unit's lab folder, assembled: the unit's own files and the engine packages it names.

The repository keeps each piece once. ``starter/<unit>/`` (unit.yaml's ``lab_folder``) holds
only what the unit adds (the stubs, the handout, public traces and tests, the unit's scripts);
the engine packages the unit names (``engine_packages``: ``servesim``, ``realdevice``) have
one source, in the code root. A lab folder is both, put together when one is made, by this
module and nothing else: ``infralab lab open``, the student zip (``release student``), the
nbgrader release, the grading template, benchmarks and tests all take their lab folder here.

    lab_files(unit) -> {relative path: source file}   # what a lab folder holds, sorted
    assemble(unit, dest) -> dest                       # a new lab folder, written atomically
    built(unit) -> folder                              # this process's assembled lab folder

A lab folder runs with python3 alone: the engine packages import nothing outside the
standard library (``tests/test_starter.py``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from .tempfolders import LAB_PREFIX, TempFolders, hold_folder
from .units import CODE_ROOT, Unit, UnitError

LEFT_OUT = frozenset({"__pycache__", ".pytest_cache", "runs", ".hypothesis"})  # never shipped


class LabFolderError(UnitError):
    """A lab folder that cannot be assembled (a clash, a missing package, a taken folder)."""


def _walk(folder: str) -> dict[str, str]:
    """``tree`` in plain strings, sorted by path (it is asked for once per submission graded);
    nothing for a folder that does not exist."""
    files, pending = {}, [("", folder)] if os.path.isdir(folder) else []
    while pending:
        rel, top = pending.pop()
        with os.scandir(top) as entries:
            for entry in entries:
                name = f"{rel}{entry.name}"
                if entry.is_dir() and entry.name not in LEFT_OUT:
                    pending.append((f"{name}/", entry.path))
                elif entry.is_file() and not entry.name.endswith(".pyc"):
                    files[name] = entry.path
    return _in_path_order(files)


def _in_path_order(files: dict[str, str]) -> dict[str, str]:
    return {rel: files[rel] for rel in sorted(files, key=lambda rel: rel.split("/"))}


def tree(folder: Path) -> dict[str, Path]:
    """The files under ``folder`` by their relative POSIX path, in path order; caches and runs
    left out (not even walked: a lab's ``runs/`` may hold many files)."""
    return {rel: Path(path) for rel, path in _walk(str(folder)).items()}


def engine_copies(unit: Unit) -> list[Path]:
    """Files in the unit's own folder under an engine package's name: stale copies from
    before the engine joined lab folders when they are made (``starter sync`` removes them)."""
    return [Path(path) for path in _copies(unit, _walk(str(unit.lab_dir)))]


def _copies(unit: Unit, own: dict[str, str]) -> list[str]:
    return [path for rel, path in own.items() if rel.split("/")[0] in unit.engine_packages]


def _sources(unit: Unit) -> dict[str, str]:
    """``lab_files`` in plain strings."""
    own = _walk(str(unit.lab_dir))
    if copies := _copies(unit, own):
        raise LabFolderError(
            f"{copies[0]}: the unit's own lab files hold a copy of an engine package; the "
            f"engine joins a lab folder when one is made (run: infralab starter sync "
            f"--unit {unit.id})"
        )
    files = dict(own)
    for package in unit.engine_packages:
        source = CODE_ROOT / package
        if not (source / "__init__.py").is_file():
            raise LabFolderError(
                f"unit {unit.id}: engine package {package!r} not found at {source}"
            )
        files |= {f"{package}/{rel}": path for rel, path in _walk(str(source)).items()}
    return _in_path_order(files)


def lab_files(unit: Unit) -> dict[str, Path]:
    """Every file of the unit's lab folder (relative path -> source file), in path order.

    Raises ``LabFolderError`` when an engine package is missing from the code root or the
    unit's own folder still holds a copy of one (it would shadow the source).
    """
    return {rel: Path(path) for rel, path in _sources(unit).items()}


def assemble(unit: Unit, dest: Path) -> Path:
    """Write the unit's lab folder to ``dest`` (which must not exist, or be an empty folder):
    built beside it and renamed into place, so a failure leaves nothing half-written. Each
    file keeps its source's bytes, mode and modification time."""
    dest = Path(dest).absolute()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise LabFolderError(f"{dest}: already exists and is not an empty folder")
    files = lab_files(unit)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        for rel, source in files.items():
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        staging.chmod(0o755)
        if dest.is_dir():
            dest.rmdir()
        staging.rename(dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return dest


# (lab folder, packages, sources' stat) -> it; each held while in use, so that a sweep of the
# folders a killed grader left (``grader.sandbox.host.sweep_folders``) leaves it alone
_built = TempFolders(LAB_PREFIX, keep=4, hold=hold_folder)


def built(unit: Unit) -> Path:
    """The unit's lab folder assembled in a private temp folder, once per process and state of
    its sources (a changed, added or removed source file makes a new one). A course unit's stays
    for the process's life; of the per-student variants' (``Unit.per_student``: a class makes
    or grades one per student), the four newest. The process that built one removes it when it
    is evicted and when the process exits, a forked ``multiprocessing`` worker included
    (``grader.tempfolders``); one that a killed process left is swept by the next grader. Read
    it, run it, copy it, while grading that unit; never change it."""
    stamp = tuple((rel, *_stat(path)) for rel, path in _sources(unit).items())
    key = (str(unit.lab_dir), unit.engine_packages, stamp)
    found = _built.get(key)
    if found is None:
        fill = lambda holder: assemble(unit, holder / "lab")  # noqa: E731
        found = _built.make(key, fill, f"{LAB_PREFIX}{unit.id}-", pinned=not unit.per_student)
    return found


def _stat(path: str) -> tuple[int, int, int]:
    info = os.stat(path)
    return info.st_mtime_ns, info.st_size, info.st_mode
