"""servesim's docstrings name rules, not units: a unit is a configuration of the one engine, so
what a module is for is said by what it does (prefix cache, output buffers, admission limits)."""

from __future__ import annotations

import ast
import re

from grader.units import CODE_ROOT

UNIT_NAME = re.compile(r"\bunits? 0\d", re.IGNORECASE)


def test_no_servesim_module_docstring_names_a_unit():
    named = {}
    for path in sorted((CODE_ROOT / "servesim").rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        found = UNIT_NAME.findall(doc)
        if found:
            named[str(path.relative_to(CODE_ROOT))] = found
    assert not named, f"module docstrings that name a unit: {named}"
