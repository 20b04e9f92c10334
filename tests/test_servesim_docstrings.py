"""servesim's docstrings and comments name rules, not units: a unit is a configuration of the
one engine, so what a module, class, function or field is for is said by what it does (prefix
cache, output buffers, admission limits)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import servesim

SERVESIM = Path(servesim.__file__).parent

UNIT_NAME = re.compile(r"\bunits? 0\d", re.IGNORECASE)
DEFINITIONS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _docstrings(kinds):
    """(file, name, docstring) of every ``kinds`` node of servesim's sources."""
    for path in sorted(SERVESIM.rglob("*.py")):
        where = str(path.relative_to(SERVESIM.parent))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, kinds):
                yield where, getattr(node, "name", "module"), ast.get_docstring(node) or ""


def test_no_servesim_module_docstring_names_a_unit():
    named = {where: UNIT_NAME.findall(doc) for where, _, doc in _docstrings(ast.Module)}
    assert not {k: v for k, v in named.items() if v}, "module docstrings that name a unit"


def test_no_servesim_class_or_function_docstring_names_a_unit():
    named = [
        f"{where}: {name}" for where, name, doc in _docstrings(DEFINITIONS) if UNIT_NAME.search(doc)
    ]
    assert not named, f"docstrings that name a unit: {named}"


def test_no_servesim_comment_names_a_unit():
    named = []
    for path in sorted(SERVESIM.rglob("*.py")):
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
        for token in tokens:
            if token.type == tokenize.COMMENT and UNIT_NAME.search(token.string):
                named.append(f"{path.relative_to(SERVESIM.parent)}:{token.start[0]}")
    assert not named, f"comments that name a unit: {named}"
