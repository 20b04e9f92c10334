"""No Python source file of the project is over 300 lines: a file that grows past that is split
along a responsibility a newcomer can name from the new file's name.

The student-facing files (``starter/``, ``solutions/``) and the tests are left out, and so is
what git ignores (virtual environments, caches, build output).
"""

from __future__ import annotations

import os
from pathlib import Path

from grader.units import CODE_ROOT

MAX_LINES = 300
LEFT_OUT_TOP = {"tests", "starter", "solutions"}  # student-facing files and the tests
IGNORED = {"node_modules", "__pycache__", "build", "dist", "runs"}  # as .gitignore


def source_files(root: Path) -> list[Path]:
    """Every ``.py`` file under ``root`` but the left-out folders and ignored ones."""
    found = []
    for folder, dirs, files in os.walk(root):
        top = Path(folder) == root
        dirs[:] = [
            d
            for d in dirs
            if not d.startswith(".")
            and d not in IGNORED
            and not d.endswith(".egg-info")
            and not (top and d in LEFT_OUT_TOP)
        ]
        found += [Path(folder) / name for name in files if name.endswith(".py")]
    return sorted(found)


def line_count(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for _ in handle)


def test_the_walk_finds_the_project_sources_and_leaves_out_the_student_files():
    found = {path.relative_to(CODE_ROOT).as_posix() for path in source_files(CODE_ROOT)}
    for module in ("grader/units.py", "servesim/__init__.py", "labs/unit07/chapter31.py"):
        assert module in found
    assert not {name for name in found if name.split("/")[0] in LEFT_OUT_TOP}


def test_no_source_file_is_over_300_lines():
    too_long = {
        path.relative_to(CODE_ROOT).as_posix(): lines
        for path in source_files(CODE_ROOT)
        if (lines := line_count(path)) > MAX_LINES
    }
    assert not too_long, f"over {MAX_LINES} lines (split each along a responsibility): {too_long}"
