#!/usr/bin/env python3
"""The chapter's exercises of this unit, computed with the lab's own code (given; not graded).

    python3 exercises.py          list them
    python3 exercises.py 31.2     static vs continuous (YOUR policies); length buckets (ex31_2.py)
    python3 exercises.py 31.3     padding utilisation, formula 31.3 (worked.py)
    python3 exercises.py 31.4     attention pairs under chunking, formula 31.4 (worked.py)
    python3 exercises.py 31.5     pages after two sequences grow (ex31_5.py)
    python3 exercises.py 31.6     Little's law on a step function (ex31_6.py)
    python3 exercises.py 31.7     M/M/1 on the engine against its formulas (ex31_7.py, optional)
    python3 exercises.py 31.9     per-request vs per-token fairness (ex31_9.py, optional)
    python3 exercises.py swap     section 31.6's example: recompute vs swap (worked.py)

The arguments after the exercise's name go to its module's ``main(argv)``; each takes
``--json`` (the lesson site checks its pages against it) and ``--help``. Exercise 31.1 is in
unit 07's lab, 31.8 and 31.10 to 31.13 in unit 09's.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servesim.exercisecli import Exercise, main

EXERCISES = {
    "31.2": Exercise("static vs continuous batching (your policies); length buckets", "ex31_2"),
    "31.3": Exercise("padding utilisation, linear and attention", "worked", args=("31.3",)),
    "31.4": Exercise("attention pairs under chunking (formula 31.4)", "worked", args=("31.4",)),
    "31.5": Exercise("KV pages after sequences of 257 and 255 grow by two", "ex31_5"),
    "31.6": Exercise("Little's law on a step function of N(t) (formula 31.7)", "ex31_6"),
    "31.7": Exercise("optional: M/M/1 on the engine against formulas 31.10, 31.13", "ex31_7"),
    "31.9": Exercise("optional: per-request vs per-token fairness, two tenants", "ex31_9"),
    "swap": Exercise("section 31.6's example: recompute vs swap", "worked", args=("swap",)),
}

if __name__ == "__main__":
    sys.exit(main("exercises.py", EXERCISES, Path(__file__).resolve().parent, sys.argv[1:]))
