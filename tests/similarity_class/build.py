"""A class of submissions for the similarity tests, made as students make them.

    filled(starter, implementation) -> str   the starter with each stub replaced by the body
                                             of the implementation's function of that name
                                             (stubs it does not implement stay); its other
                                             functions and classes (helpers) appended
    disguised(source) -> str                 a copy: every local variable renamed, the
                                             top-level functions in reverse order
    solved(solution) -> str                  a reference solution file without its markers

The implementations in ``unit07/`` and ``unit08/`` were written from the handout's docstrings,
each on its own (unit 08's: ``static``, ``continuous`` and ``budgeted`` only).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

STUB = re.compile(
    r'^    # YOUR CODE HERE\n    raise NotImplementedError\("(\w+)\(\) [^\n]*"\)\n', re.M
)
MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\n", re.M)


def _functions(source: str) -> dict[str, str]:
    """Each top-level function's and class's whole source, by name, in file order."""
    lines = source.splitlines(keepends=True)
    tree = ast.parse(source)
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            found[node.name] = "".join(lines[first - 1 : node.end_lineno])
    return found


def _body(function: str) -> str:
    """The body of one function's source (its lines after the ``def`` line)."""
    node = ast.parse(function).body[0]
    lines = function.splitlines(keepends=True)
    return "".join(lines[node.body[0].lineno - 1 : node.end_lineno])


def filled(starter: str, implementation: str) -> str:
    functions = _functions(implementation)
    stubbed = set(STUB.findall(starter))
    assert stubbed & set(functions), "implements none of the stubs"
    out = STUB.sub(lambda m: _body(functions[m[1]]) if m[1] in functions else m[0], starter)
    helpers = [text for name, text in functions.items() if name not in stubbed]
    return out + "".join(f"\n\n{text}" for text in helpers)


def _locals(source: str) -> set[str]:
    """Names assigned inside functions (targets, loop and ``with`` variables)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                    names.add(inner.id)
    return names


def disguised(source: str) -> str:
    renames = {name: f"my_{name}_val" for name in _locals(source)}
    tokens = [
        tok._replace(string=renames.get(tok.string, tok.string))
        if tok.type == tokenize.NAME
        else tok
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
    ]
    renamed = tokenize.untokenize(tokens)
    functions = _functions(renamed)
    assert renames and len(functions) >= 2
    head = renamed
    for text in functions.values():
        head = head.replace(text, "")
    return head.rstrip() + "\n" + "".join(f"\n\n{t}" for t in reversed(functions.values()))


def solved(solution: str) -> str:
    return MARKER.sub("", solution)
