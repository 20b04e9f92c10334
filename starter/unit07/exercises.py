#!/usr/bin/env python3
"""The chapter's exercises of this unit, computed with the lab's own code (given; not graded).

    python3 exercises.py          list them
    python3 exercises.py 31.1     TTFT, TPOT and the first wait of one request (ex31_1.py)

The arguments after the exercise number go to its module's ``main(argv)``. Exercises 31.2 to
31.9 are in unit 08's lab, 31.10 to 31.13 in unit 09's.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servesim.exercisecli import Exercise, main

EXERCISES = {
    "31.1": Exercise("TTFT, TPOT and the first wait of one request; what adds up", "ex31_1"),
}

if __name__ == "__main__":
    sys.exit(main("exercises.py", EXERCISES, Path(__file__).resolve().parent, sys.argv[1:]))
