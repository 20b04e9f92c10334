#!/usr/bin/env python3
"""The chapter's exercises of this unit, each run on the lab's engine (given; not graded).

    python3 exercises.py 31.10    the output buffer of a slow client (ex31_10.py)
    python3 exercises.py 31.11    cancellation, page release and re-queue (ex31_11.py)
    python3 exercises.py 31.13    a grown tail while memory is free (ex31_13.py)

Each exercise is a module of this folder, ``ex<chapter>_<number>.py``, with a ``main(argv)``;
the arguments after the exercise number go to it.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

EXERCISES = {"31.10": "ex31_10", "31.11": "ex31_11", "31.13": "ex31_13"}
EXIT_BAD_INPUT = 2


def main(argv: list[str] | None = None) -> int:
    """Run the exercise named by ``argv[0]``; 2 with one line for an unknown or missing one."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in EXERCISES:
        names = ", ".join(EXERCISES)
        got = f"'{argv[0]}'" if argv else "nothing"
        print(f"exercises.py: error: give one of {names} (got {got})", file=sys.stderr)
        return EXIT_BAD_INPUT
    name = EXERCISES[argv[0]]
    if not (Path(__file__).resolve().parent / f"{name}.py").is_file():
        print(f"exercises.py: error: exercise {argv[0]} needs {name}.py, which this lab "
              "folder does not have", file=sys.stderr)  # fmt: skip
        return EXIT_BAD_INPUT
    return importlib.import_module(name).main(argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main())
