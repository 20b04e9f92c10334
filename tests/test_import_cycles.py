"""No import circle among the project's packages: every import counts, including those inside a
function and those under ``if TYPE_CHECKING`` (a circle that only types close is still one
module that must know its importer)."""

from __future__ import annotations

import ast

from grader.units import CODE_ROOT

PACKAGES = ("grader", "servesim", "realdevice")


def modules() -> dict[str, object]:
    found = {}
    for package in PACKAGES:
        for path in (CODE_ROOT / package).rglob("*.py"):
            parts = path.relative_to(CODE_ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def import_graph(found: dict) -> dict[str, set[str]]:
    graph = {name: set() for name in found}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [[alias.name] for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([base] if base else [])])
                targets = [[f"{base}.{alias.name}", base] for alias in node.names]
            else:
                continue
            for candidates in targets:
                # a submodule when the name is one, else the package the name comes from
                hit = next((c for c in candidates if c in found), None)
                if hit and hit != name:
                    graph[name].add(hit)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_walk_sees_the_packages_and_their_imports():
    graph = import_graph(modules())
    assert {"grader.units", "servesim.engine", "realdevice.model"} <= graph.keys()
    assert "grader.units" in graph["grader.parts"]


def test_a_circle_is_found_when_there_is_one():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_back_up_to_its_importer():
    assert circles(import_graph(modules())) == []
