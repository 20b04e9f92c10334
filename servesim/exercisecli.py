"""``exercises.py`` of a lab folder: the chapter's exercises the lab has, listed and run.

A lab names its exercises in one mapping, ``{"31.10": Exercise(...), ...}``. Each is either a
module of the lab folder, ``ex<chapter>_<number>.py`` with a ``main(argv)``, or a section of
the unit's notebook (``notebook``: where it is). ``python3 exercises.py`` (or ``--list``) lists
them; ``python3 exercises.py 31.10 ARGS`` runs one, the arguments after the number going to its
``main``. Standard library only, like everything in a lab folder.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path

EXIT_BAD_INPUT = 2


@dataclass(frozen=True)
class Exercise:
    """One exercise: what it computes, and the module that runs it or the notebook section."""

    what: str
    module: str | None = None
    notebook: str | None = None
    args: tuple[str, ...] = ()  # put before the user's arguments (one module, several exercises)


def listing(prog: str, exercises: dict[str, Exercise]) -> str:
    """One line per exercise: its number, what it computes, how to reach it."""
    lines = [f"the chapter's exercises in this lab ({prog} NUMBER [ARGS], or the notebook):"]
    for number, exercise in exercises.items():
        where = f"notebook: {exercise.notebook}" if exercise.notebook else f"{prog} {number}"
        lines.append(f"  {number:6s} {exercise.what}  [{where}]")
    return "\n".join(lines)


def main(prog: str, exercises: dict[str, Exercise], folder: Path, argv: list[str]) -> int:
    """List (no argument, ``--list``) or run the exercise ``argv[0]``; 2 with one line on
    stderr for an unknown one or a module this folder lacks."""
    if not argv or argv[0] in ("--list", "-h", "--help"):
        print(listing(prog, exercises))
        return 0
    exercise = exercises.get(argv[0])
    if exercise is None:
        names = ", ".join(exercises)
        print(f"{prog}: error: give one of {names} (got '{argv[0]}')", file=sys.stderr)
        return EXIT_BAD_INPUT
    if exercise.module is None:
        print(f"exercise {argv[0]} ({exercise.what}) is in the notebook: {exercise.notebook}")
        return 0
    if not (Path(folder) / f"{exercise.module}.py").is_file():
        print(f"{prog}: error: exercise {argv[0]} needs {exercise.module}.py, which this lab "
              "folder does not have", file=sys.stderr)  # fmt: skip
        return EXIT_BAD_INPUT
    sys.path.insert(0, str(folder))
    return importlib.import_module(exercise.module).main([*exercise.args, *argv[1:]]) or 0
