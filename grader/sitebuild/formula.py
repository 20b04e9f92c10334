"""Glossary formulas: a definition the glossary states and a test evaluates on a run.

Two kinds. A *request* formula is a latency of one request in the book's symbols (table 31.1):
``a`` its arrival, ``u[k]`` the time of its k-th output token (from 1), ``O`` its output tokens
and, for a per-gap figure, ``j`` the token index (2 to O), e.g. ``(u[O] - u[1]) / (O - 1)``;
:func:`evaluate_request` computes it on a token timeline (a list over j for a per-gap one, None
where it divides by zero). A *count* formula is an expression over counts of request sets and the
window length, e.g.
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
# a request formula's symbols (table 31.1): arrival, token times (1-based), outputs, gap index
REQUEST_NAMES = {"a", "u", "O", "j"}
_REQUEST_NODES = (
    ast.Expression, ast.BinOp, ast.Sub, ast.Add, ast.Div, ast.Mult, ast.Subscript, ast.Name,
    ast.Load, ast.Constant,
)  # fmt: skip


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


def _parse(text: str, where: str) -> ast.Expression:
    try:
        return ast.parse(text, mode="eval")
    except SyntaxError:
        raise BuildError(f"{where}: formula '{text}' is not an expression") from None


def is_request_formula(text: str) -> bool:
    """Whether ``text`` is a request formula (it names one of ``REQUEST_NAMES``)."""
    tree = _parse(text, "formula")
    return any(isinstance(n, ast.Name) and n.id in REQUEST_NAMES for n in ast.walk(tree))


def check_request_formula(text: str, where: str) -> ast.Expression:
    """The parsed request formula; BuildError naming ``where`` when it uses anything but
    ``REQUEST_NAMES``, numbers, ``+ - * /`` and ``u[...]``."""
    tree = _parse(text, where)
    for node in ast.walk(tree):
        if not isinstance(node, _REQUEST_NODES):
            raise BuildError(f"{where}: a request formula may only add, subtract, multiply, divide")
        if isinstance(node, ast.Name) and node.id not in REQUEST_NAMES:
            raise BuildError(f"{where}: formula names unknown '{node.id}'")
        if isinstance(node, ast.Subscript) and not (
            isinstance(node.value, ast.Name) and node.value.id == "u"
        ):
            raise BuildError(f"{where}: only u[k] is indexed")
    return tree


class _Times:
    """``u[k]``: the k-th output token's time, k from 1 as in the book."""

    def __init__(self, times: list[float]):
        self.times = times

    def __getitem__(self, k: int) -> float:
        if not 1 <= k <= len(self.times):
            raise IndexError(f"u[{k}] with {len(self.times)} tokens")
        return self.times[k - 1]


def evaluate_request(text: str, arrival_ms: float, token_times_ms: list[float]):
    """The request formula's value for one request: a number, a list over j = 2..O for a per-gap
    formula (one naming ``j``), or None where it divides by zero (TPOT of a one-token output)."""
    tree = check_request_formula(text, "formula")
    code = compile(tree, "<formula>", "eval")
    scope = {"a": arrival_ms, "u": _Times(token_times_ms), "O": len(token_times_ms)}

    def at(j):
        try:
            return eval(code, {"__builtins__": {}}, scope | {"j": j})
        except ZeroDivisionError:
            return None

    if any(isinstance(n, ast.Name) and n.id == "j" for n in ast.walk(tree)):
        return [at(j) for j in range(2, len(token_times_ms) + 1)]
    return at(None)


def check_formula(text: str, where: str) -> ast.Expression:
    """The parsed formula; BuildError naming ``where`` when it uses anything but the vocabulary."""
    if is_request_formula(text):
        return check_request_formula(text, where)
    tree = _parse(text, where)
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
    """The words a definition with formula ``text`` must contain (none for a request formula:
    its symbols are the book's, and the test compares it with the metric code)."""
    tree = check_formula(text, "formula")
    if is_request_formula(text):
        return []
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    words = [SETS[name] for name in SETS if name in names]
    if isinstance(tree.body, ast.BinOp) and isinstance(tree.body.op, ast.Div):
        below = ast.unparse(tree.body.right)
        if below not in DENOMINATORS:
            raise BuildError(f"formula '{text}': denominator must be one of {list(DENOMINATORS)}")
        words.append(DENOMINATORS[below])
    return words


def evaluate(text: str, run: RunView) -> float:
    """The count formula's value on ``run`` (window_s in seconds)."""
    tree = check_formula(text, "formula")

    def count(*names: str) -> int:
        return sum(1 for r in run.requests if all(run.member(n, r) for n in names))

    scope = {name: name for name in SETS} | {
        "count": count,
        "window_s": (run.end_ms - run.start_ms) / 1000,
    }
    return eval(compile(tree, "<formula>", "eval"), {"__builtins__": {}}, scope)
