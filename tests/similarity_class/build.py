"""A class of submissions for the similarity tests, made as students make them.

    filled(starter, implementation) -> str   the starter with each stub replaced by the body
                                             of the implementation's function of that name
                                             (stubs it does not implement stay); its other
                                             functions and classes (helpers) appended; the
                                             starter as it is if it implements none
    disguised(source) -> str                 a copy: every local variable renamed, the
                                             top-level functions in reverse order
    solved(solution) -> str                  a reference solution file without its markers

The implementations in ``unit07/`` and ``unit08/`` were written from the handout's docstrings,
each on its own (unit 08's: ``static``, ``continuous`` and ``budgeted`` only; unit 09's:
``p99``, ``prefill_amplification``, ``waiting_share`` and ``mean_queue`` of ``measure.py``).
"""

from __future__ import annotations

import ast
import re

STUB = re.compile(
    r'^    # YOUR CODE HERE\n    raise NotImplementedError\("(\w+)\(\) [^\n]*"\)\n', re.M
)
MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\n", re.M)


def _span(node: ast.stmt) -> tuple[int, int]:
    """A top-level statement's first and last line (1-based), decorators included."""
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)]), node.end_lineno


def _functions(source: str) -> dict[str, str]:
    """Each top-level function's and class's whole source, by name, in file order."""
    lines = source.splitlines(keepends=True)
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            first, last = _span(node)
            found[node.name] = "".join(lines[first - 1 : last])
    return found


def _body(function: str) -> str:
    """The body of one function's source (its lines after the ``def`` line)."""
    node = ast.parse(function).body[0]
    lines = function.splitlines(keepends=True)
    return "".join(lines[node.body[0].lineno - 1 : node.end_lineno])


def _bound(tree: ast.Module) -> set[str]:
    """The names a module's top-level imports, definitions and assignments bind."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        else:
            names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return names


def _with_imports(text: str, implementation: str) -> str:
    """``text`` with the implementation's imports of names it does not bind yet, after its
    last top-level import (a student adds ``from math import ceil`` there)."""
    tree, lines = ast.parse(text), implementation.splitlines(keepends=True)
    bound = _bound(tree)
    wanted = [
        "".join(lines[node.lineno - 1 : node.end_lineno])
        for node in ast.parse(implementation).body
        if isinstance(node, ast.Import | ast.ImportFrom)
        and {(a.asname or a.name).split(".")[0] for a in node.names} - bound
    ]
    last = max(n.end_lineno for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom))
    out = text.splitlines(keepends=True)
    return "".join([*out[:last], *wanted, *out[last:]])


def filled(starter: str, implementation: str) -> str:
    functions = _functions(implementation)
    stubbed = set(STUB.findall(starter))
    if not stubbed & set(functions):
        return starter
    out = STUB.sub(lambda m: _body(functions[m[1]]) if m[1] in functions else m[0], starter)
    helpers = [text for name, text in functions.items() if name not in stubbed]
    return _with_imports(out + "".join(f"\n\n{text}" for text in helpers), implementation)


def _renamed(source: str) -> str:
    """Every variable a top-level function assigns, renamed in that function only (the
    ``Name`` nodes: attributes, keywords and strings stay)."""
    edits = []
    for func in ast.parse(source).body:
        if isinstance(func, ast.FunctionDef):
            names = [n for n in ast.walk(func) if isinstance(n, ast.Name)]
            stored = {n.id for n in names if isinstance(n.ctx, ast.Store)}
            edits += [(n.lineno, n.col_offset, n.id) for n in names if n.id in stored]
    lines = [line.encode() for line in source.splitlines(keepends=True)]
    for line, col, name in sorted(edits, reverse=True):  # offsets are UTF-8 bytes
        text = lines[line - 1]
        lines[line - 1] = text[:col] + f"my_{name}_val".encode() + text[col + len(name) :]
    return b"".join(lines).decode()


def disguised(source: str) -> str:
    """A copy: ``_renamed``, then the top-level functions in reverse order, each taking the
    place of its mirror (classes and module statements stay where they are)."""
    renamed = _renamed(source)
    lines = renamed.splitlines(keepends=True)
    spans = [_span(n) for n in ast.parse(renamed).body if isinstance(n, ast.FunctionDef)]
    assert renamed != source and len(spans) >= 2
    texts = ["".join(lines[first - 1 : last]) for first, last in spans]
    out, done = [], 0
    for (first, last), text in zip(spans, reversed(texts)):
        out += [*lines[done : first - 1], text]
        done = last
    return "".join([*out, *lines[done:]])


def solved(solution: str) -> str:
    return MARKER.sub("", solution)
