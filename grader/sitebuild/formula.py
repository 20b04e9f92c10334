"""Glossary formulas: a definition the glossary states and a test evaluates on a run.

A formula is an expression over counts of request sets and the window length, e.g.
``count(window, completed, quality, slo) / count(window)``. ``count(a, b, ...)`` counts the
requests that belong to every named set; the sets and values are fixed here (``SETS``,
``VALUES``) and each has the Chinese words the glossary text must use when its formula does,
so the prose cannot leave out a gate (the quality check) or a denominator that the formula has.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from .claims import BuildError

# set name -> words the glossary's text must contain when the formula uses it
SETS = {
    "window": "测量窗口",  # arrived in [start, end) of the protocol's window
    "completed": "完成",  # status completed
    "quality": "质量",  # passed the quality check
    "slo": "目标",  # met every SLO target (TTFT and TPOT)
}
# a denominator -> words the text must contain when it divides by it
DENOMINATORS = {"count(window)": "提交", "window_s": "窗口长度"}
VALUES = {"window_s"}


@dataclass(frozen=True)
class RunView:
    """What a formula reads from one run: its requests, window and per-request tests."""

    requests: list[dict]
    start_ms: float
    end_ms: float
    passes: Callable[[dict], bool]  # the quality check
    meets_slo: Callable[[dict], bool]

    def member(self, name: str, request: dict) -> bool:
        if name == "window":
            return self.start_ms <= request["arrivalMs"] < self.end_ms
        if name == "completed":
            return request["status"] == "completed"
        if name == "quality":
            return self.passes(request)
        return self.meets_slo(request)


def check_formula(text: str, where: str) -> ast.Expression:
    """The parsed formula; BuildError naming ``where`` when it uses anything but the vocabulary."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise BuildError(f"{where}: formula '{text}' is not an expression") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id == "count") or node.keywords:
                raise BuildError(f"{where}: formula calls only count(set, ...)")
            if not node.args or any(
                not (isinstance(a, ast.Name) and a.id in SETS) for a in node.args
            ):
                raise BuildError(f"{where}: count() takes set names from {sorted(SETS)}")
        elif isinstance(node, ast.Name):
            if node.id not in SETS and node.id not in VALUES and node.id != "count":
                raise BuildError(f"{where}: formula names unknown '{node.id}'")
        elif not isinstance(
            node, (ast.Expression, ast.BinOp, ast.Div, ast.Mult, ast.Load, ast.Constant)
        ):
            raise BuildError(f"{where}: formula may only divide and multiply counts")
    return tree


def required_words(text: str) -> list[str]:
    """The words a definition with formula ``text`` must contain."""
    tree = check_formula(text, "formula")
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    words = [SETS[name] for name in SETS if name in names]
    if isinstance(tree.body, ast.BinOp) and isinstance(tree.body.op, ast.Div):
        below = ast.unparse(tree.body.right)
        if below not in DENOMINATORS:
            raise BuildError(f"formula '{text}': denominator must be one of {list(DENOMINATORS)}")
        words.append(DENOMINATORS[below])
    return words


def evaluate(text: str, run: RunView) -> float:
    """The formula's value on ``run`` (window_s in seconds)."""
    tree = check_formula(text, "formula")

    def count(*names: str) -> int:
        return sum(1 for r in run.requests if all(run.member(n, r) for n in names))

    scope = {name: name for name in SETS} | {
        "count": count,
        "window_s": (run.end_ms - run.start_ms) / 1000,
    }
    return eval(compile(tree, "<formula>", "eval"), {"__builtins__": {}}, scope)
