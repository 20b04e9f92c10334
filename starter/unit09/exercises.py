#!/usr/bin/env python3
"""The chapter's exercises of this unit, each run on the lab's engine (given; not graded).

    python3 exercises.py          list them
    python3 exercises.py 31.8     stage p99s do not add up: the union bound (ex31_8.py)
    python3 exercises.py 31.10    the output buffer of a slow client (ex31_10.py)
    python3 exercises.py 31.11    cancellation, page release and re-queue (ex31_11.py)
    python3 exercises.py 31.12    the evidence plan: in the notebook, section 习题 31.12
    python3 exercises.py 31.13    a grown tail while memory is free (ex31_13.py)

The arguments after the exercise number go to its module's ``main(argv)``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servesim.exercisecli import Exercise, main

EXERCISES = {
    "31.8": Exercise("two stages' p99 of 100 and 200 ms, the total's p99", "ex31_8"),
    "31.10": Exercise("how soon a slow client's output buffer fills, and then", "ex31_10"),
    "31.11": Exercise("cancel, page release, re-queue: the invariants", "ex31_11"),
    "31.12": Exercise(
        "open vs closed loop; evidence with every denominator",
        notebook="unit09.ipynb, 习题 31.12 · 证据方案 (its runs: tailruns.py, measure.py)",
    ),
    "31.13": Exercise("tail grows while memory is free: diagnosis, then action", "ex31_13"),
}

if __name__ == "__main__":
    sys.exit(main("exercises.py", EXERCISES, Path(__file__).resolve().parent, sys.argv[1:]))
