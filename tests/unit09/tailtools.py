"""Helpers the unit 09 diagnosis tests share: the reference measure.py, the tail-case
generator, and reference runs of its cases (loaded by path: unit 09's folders hold no
package)."""

from __future__ import annotations

import importlib.util
import sys
from functools import cache

from grader import reference
from grader.units import REPO_ROOT, load_unit


def _module(key: str, path):
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


measure = _module("_infralab_solution_unit09_measure", REPO_ROOT / "solutions/unit09/measure.py")
tailcases = _module("_infralab_unit09_tailcases", REPO_ROOT / "labs/unit09/tailcases.py")


@cache
def paged():
    """Unit 08's reference ``paged`` policy (vLLM V1's scheduler)."""
    return reference.solution_policies(load_unit("unit08")).paged


def backpressure():
    """Unit 09's reference backpressure policy (solutions/unit09/policies.py), or None on an
    engine without the streaming rules."""
    if not tailcases.engine_streams():
        return None
    solution = REPO_ROOT / "solutions/unit09/policies.py"
    return _module("_infralab_solution_unit09_policies", solution).backpressure


@cache
def case_run(kind: str, seed: int) -> dict:
    """The reference run of one tail case (``baseline`` for the light-load comparison run):
    ``paged``, or ``backpressure`` on a streaming device."""
    case = tailcases.baseline_case(seed) if kind == "baseline" else tailcases.make_case(kind, seed)
    return tailcases.run_case(case, backpressure() if case.streaming else paged())
