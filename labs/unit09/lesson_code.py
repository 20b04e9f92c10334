"""The lab's own scripts, loaded for the lesson page without touching ``sys.path`` for good.

The lab's exercise scripts (``ex31_10.py`` ...) are written for a student's folder: they put
that folder first on ``sys.path`` and import ``measure`` and ``tailruns`` by name. The lesson
loads them by path (``grader.plugins.load_file``), gives them the reference ``measure.py`` and
the lab's ``tailruns.py`` under those names while they import, and puts ``sys.path`` and
``sys.modules`` back as they were.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from grader.plugins import load_file
from grader.units import Unit


@contextmanager
def _borrowed(names: dict[str, ModuleType]):
    """``names`` importable while the block runs; ``sys.path`` and ``sys.modules`` restored."""
    path = list(sys.path)
    before = {name: sys.modules.get(name) for name in names}
    sys.modules.update(names)
    try:
        yield
    finally:
        sys.path[:] = path
        for name, module in before.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def lab_file(unit: Unit, name: str, **deps: ModuleType) -> ModuleType:
    """The lab folder's ``<name>.py``, with ``deps`` importable by name while it loads."""
    with _borrowed(deps):
        return load_file(Path(unit.lab_dir) / f"{name}.py")


def solution_file(unit: Unit, name: str) -> ModuleType:
    """The reference solution's ``<name>.py`` (for example ``measure``)."""
    return load_file(Path(unit.solutions_dir) / f"{name}.py")


def exercise_31_13(unit: Unit) -> ModuleType:
    """``ex31_13.py`` wired to the lab's ``tailruns.py`` and the reference ``measure.py``."""
    tailruns = lab_file(unit, "tailruns")
    measure = solution_file(unit, "measure")
    return lab_file(unit, "ex31_13", tailruns=tailruns, measure=measure)
