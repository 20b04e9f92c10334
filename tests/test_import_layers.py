"""``grader.units`` owns ``Unit`` and sits at the bottom: what reads a unit's parts
(``grader.parts``) and what writes its lab folder build on it, and nothing it imports, even
inside a function, imports back up to them."""

from __future__ import annotations

import ast
from pathlib import Path

from grader.units import CODE_ROOT

GRADER = CODE_ROOT / "grader"
BOTTOM = {"grader.units", "grader.checkcache", "grader.schema"}  # units and its own helpers


def grader_imports(module: str) -> set[str]:
    """Every ``grader.*`` module that ``module`` imports anywhere in its source."""
    path = CODE_ROOT / Path(*module.split(".")).with_suffix(".py")
    package = module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names = [f"{base}.{alias.name}" for alias in node.names]
            found |= {
                n for n in names if (GRADER / Path(*n.split(".")[1:])).with_suffix(".py").is_file()
            }
            found.add(base)
    return {name for name in found if name.startswith("grader.") and name != module}


def test_units_imports_only_its_own_helpers():
    for module in sorted(BOTTOM):
        assert grader_imports(module) <= BOTTOM, module


def test_parts_builds_on_units_and_units_never_reads_parts():
    assert "grader.units" in grader_imports("grader.parts")
    assert "grader.parts" not in set().union(*(grader_imports(m) for m in BOTTOM))
