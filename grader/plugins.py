"""Unit plug-ins: Python files in a unit's folder that staff tools load by path.

A plug-in is staff code (trusted). It is imported under a private module name made from the
unit id and the file's path, so two units' plug-ins never collide and neither shadows a package.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from .units import Unit, UnitError


def load_plugin(unit: Unit, relative: str, what: str) -> ModuleType:
    """The module at ``labs/<unit>/<relative>``; ``what`` names it in errors."""
    path = (unit.unit_dir / relative).resolve()
    if not path.is_file():
        raise UnitError(f"unit {unit.id}: {what} {relative} not found in {unit.unit_dir}")
    return load_file(path)


def load_file(path: Path) -> ModuleType:
    """Import the Python file ``path`` by location, once, as a module named after that location.

    The module is registered in ``sys.modules`` (dataclasses and pickling look classes up by
    module name) and removed again if executing it fails.
    """
    path = Path(path).resolve()
    name = "_infralab_plugin_" + re.sub(r"\W", "_", str(path.with_suffix("")))
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def plugin_table(unit: Unit, name: str, shape: str) -> dict:
    """The dict ``name`` of the plug-in named by ``notebook.answer_keys`` (``shape`` describes
    it for the error message)."""
    relative = unit.doc.get("notebook", {}).get("answer_keys")
    if relative is None:
        raise UnitError(f"unit {unit.id} has no notebook answer keys")
    table = getattr(load_plugin(unit, relative, "answer-key plug-in"), name, None)
    if not isinstance(table, dict):
        raise UnitError(f"unit {unit.id}: {relative} must define {name} = {{{shape}}}")
    return table
