"""The reference backpressure policy for the streaming tests: unit 09's graded
``policies.py:backpressure`` (solutions/unit09), loaded by path (unit folders hold no package),
with unit 08's default budget so a test can call ``backpressure(view)``."""

from __future__ import annotations

import importlib.util
import sys

from grader.units import REPO_ROOT

_KEY = "_infralab_solution_unit09_policies"  # the name tests/unit09/tailtools.py loads it by


def _solution():
    if _KEY not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            _KEY, REPO_ROOT / "solutions/unit09/policies.py"
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules[_KEY] = module
        spec.loader.exec_module(module)
    return sys.modules[_KEY]


def backpressure(view, budget: int = 512):
    """Unit 09's reference ``backpressure(view, budget)``."""
    return _solution().backpressure(view, budget)


def first_resume(view) -> float:
    """Unit 09's ``first_resume(view)``: when the first paused stream drains to the low mark."""
    return _solution().first_resume(view)
