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


VERIFY = GRADER / "verify"
# the engine modules whose rules the replay applies: each must be a plain import of grader/verify
REPLAYED_RULES = {
    "servesim.recorded",
    "servesim.rules",
    "servesim.streaming",
}


def imported_names(path: Path) -> set[str]:
    """Every absolute module an ``import`` or ``from ... import`` statement of ``path`` names
    (``from servesim import rules`` names both ``servesim`` and ``servesim.rules``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_static_import_graph_shows_verify_depends_on_servesim():
    """The replay's dependence on the engine is plain ``import`` statements, so a static import
    graph shows grader/verify -> servesim; nothing there loads a module by name."""
    modules = sorted(VERIFY.glob("*.py"))
    names = set().union(*(imported_names(path) for path in modules))
    assert "servesim" in {name.split(".")[0] for name in names}
    assert names >= REPLAYED_RULES, REPLAYED_RULES - names
    for path in modules:
        source = path.read_text(encoding="utf-8")
        assert "importlib" not in imported_names(path), path.name
        for needle in ("import_module", "__import__"):
            assert needle not in source, f"{path.name} loads a module by name ({needle})"


def test_reference_has_no_engine_lookup():
    """``grader.reference`` names no engine by unit: every unit runs the one ``servesim``."""
    tree = ast.parse((GRADER / "reference.py").read_text(encoding="utf-8"))
    functions = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    assert "engine" not in functions
    assert "servesim" in imported_names(GRADER / "reference.py")
