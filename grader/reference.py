"""Run a unit's lab engine in-process with the reference (solution) policies.

Staff code is trusted, so it imports the lab's pristine engine and the solution files directly.
Student code never comes through here: the grader runs it in a child process.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import servesim  # the one engine source, every unit's: units differ by configuration
from servesim.runfile import build_run
from servesim.trace import resolve_trace

from .units import Unit


def solution_policies(unit: Unit) -> ModuleType:
    """The reference ``policies.py`` of ``unit``, loaded under a private module name."""
    return solution_module(unit, "policies.py")


def solution_module(unit: Unit, filename: str) -> ModuleType:
    """The reference solution's ``filename`` of ``unit`` (e.g. unit 09's ``measure.py``),
    loaded once under a private module name."""
    path = (unit.solutions_dir / filename).resolve()
    # one module per file: two units (or two course roots) never share a name
    name = "_infralab_solution_" + re.sub(r"\W", "_", f"{unit.id}_{path}")
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before it runs: its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def device_profile(unit: Unit, **overrides):
    """The unit's device from unit.yaml, with snake_case overrides (e.g. ``overhead_ms=0``)."""
    return replace(servesim.DeviceProfile.from_json(unit.device, source="unit.yaml"), **overrides)


def run_reference(
    unit: Unit, trace, policy: str, params: dict, device, fault=None, *, queue_cap=None, closed=None
) -> dict:
    """One run entry (the run-file contract) of the reference ``policy`` on a parsed trace.

    Units with extended run files (unit 08) run as their simulate.py does: the engine enforces
    the policy's ``budget`` parameter, the policy's ``admit`` function sees every arrival, and
    ``queue_cap`` / ``closed`` (a closed-loop source replacing ``trace``) apply.
    """
    spec = next(p for p in unit.policies if p["name"] == policy)
    solution = solution_policies(unit)
    function = getattr(solution, spec["function"])
    extended = unit.doc.get("run_file") == "extended"
    engine_limits, stated = {}, None
    if extended:
        admit = getattr(solution, spec["admit"]) if spec.get("admit") else None
        stated = {"budget": params.get("budget"), "queueCap": queue_cap}
        engine_limits = {"budget": stated["budget"], "queue_cap": queue_cap, "admit": admit}
        engine_limits["closed"] = closed
    policy_fn = lambda view: function(view, **params)  # noqa: E731
    timeline = servesim.simulate(trace, policy_fn, device, **engine_limits)
    return build_run(policy, params, device, timeline, fault, extended=extended, limits=stated)


def load_trace(unit: Unit, name_or_path: str):
    """A trace by name (public lab traces first, then the unit's hidden ones) or by path."""
    path = Path(name_or_path)
    hidden = unit.traces_dir / "hidden" / f"{name_or_path}.json"
    if not path.exists() and hidden.exists():
        path = hidden
    else:
        path = resolve_trace(name_or_path, unit.lab_dir / "traces")
    return servesim.read_trace_file(path)
