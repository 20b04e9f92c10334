"""Tries to import the reference solution and the grader package from wherever they might be
(the places a course checkout is usually found, the folders above its own), and to read the
solution file itself from each of them. ``KNOWN_PATHS`` is empty here; the test that plays an
attacker who knows the grader's checkout and its whole import path fills it in, and then the
attack looks there only (another copy of the course on the host would decide nothing).

Every attempt's failure is caught, so a failed attack always ends in the one ImportError below,
whatever the host offers: its verdict and its feedback never depend on where the checkout lies.

EARNS: none
"""

import importlib
import os
import sys

KNOWN_PATHS: list[str] = []

if KNOWN_PATHS:  # told where the grader lies: look there only, whatever else the host holds
    sys.path[:0] = KNOWN_PATHS
else:
    for candidate in ("/autograder/source", "../..", "../../..", os.path.expanduser("~")):
        sys.path.insert(0, os.path.abspath(candidate))
    for top in ("/", "/opt", "/srv", "/home", "/root", "/tmp"):
        try:
            sys.path.extend(os.path.join(top, name) for name in os.listdir(top))
        except OSError:
            pass


def _imported():
    for name in ("solutions.unit07.policies", "grader.reference"):
        try:
            module = importlib.import_module(name)
            if name == "grader.reference":
                from grader.units import load_unit

                module = module.solution_policies(load_unit("unit07"))
            return module.fcfs, module.chunked
        except Exception:
            continue
    return None


def _read():
    for root in list(sys.path):
        path = os.path.join(root, "solutions", "unit07", "policies.py")
        try:
            with open(path) as handle:
                namespace = {"__name__": "stolen"}
                exec(compile(handle.read(), path, "exec"), namespace)
            return namespace["fcfs"], namespace["chunked"]
        except Exception:
            continue
    return None


_found = _imported() or _read()
if _found is None:
    raise ImportError("could not import the reference solution")
fcfs, chunked = _found
