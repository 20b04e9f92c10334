"""Helpers the unit 08 repo tests share: the unit, its solution modules, reference runs."""

from __future__ import annotations

import importlib.util
import sys

from grader import reference
from grader.units import REPO_ROOT, load_unit

UNIT08 = load_unit("unit08")
CHAPTER_DEVICES = REPO_ROOT / "starter" / "unit08" / "devices"


def solution_module(name: str):
    """A solution file of unit 08 (``measure`` or ``policies``) under a private module name."""
    if name == "policies":
        return reference.solution_policies(UNIT08)
    key = f"_infralab_solution_unit08_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, UNIT08.solutions_dir / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


measure = solution_module("measure")


def record(rid, arrival_ms, end_ms, status="completed", tokens=None):
    """A run-file request record with just the fields measure.py reads."""
    tokens = list(tokens or ([] if status == "rejected" else [end_ms]))
    first = tokens[0] if tokens else None
    return {
        "id": rid,
        "arrivalMs": arrival_ms,
        "statusMs": end_ms,
        "status": status,
        "tokenTimesMs": tokens,
        "ttftMs": None if first is None else first - arrival_ms,
        "tpotMs": (tokens[-1] - first) / (len(tokens) - 1) if len(tokens) > 1 else None,
    }
