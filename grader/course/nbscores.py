"""The score of every autograded notebook cell, decided outside the notebook's kernel.

A test cell of a unit's notebook ends by handing its answers in (``hand_in(name=value)``, see
``nbcells.HAND_IN``): the kernel shows them as one output of type ``ANSWERS_MIME``. After the
notebook has run, ``score_cell`` (in the grader's own process, see ``nbautograde``) takes the
last such output as the student's claim and judges it with the unit's ``CHECKS`` (the answer-key
plug-in, next to ``KEYS``). Nothing the kernel ran can change a check, a key or a verdict: the
kernel only says what the student's answer is, and the answer keys never enter it.

Checks:

- ``Close(name, case, expect, at)``: the handed-in ``name`` (at the keys ``at``) equals
  ``expect(answer key of case)`` number by number (relative tolerance ``TOLERANCE``);
- ``Filled(name, template)``: the handed-in ``name`` has the template's shape, with a finite
  number (or None where the template says ``NUMBER_OR_NONE``) at every leaf;
- ``Policies()``: the unit's editable files, as submitted, on the hidden graded cases with the
  sandboxed grader (``nbcheck.grade_policies``); partial credit.

Messages are in the notebook's language and name only the student's own answer, never a key.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..units import Unit

ANSWERS_MIME = "application/vnd.infralab.answers+json"
ANSWERS_MAX_BYTES = 1 << 20  # a handed-in document above this is no answer
TOLERANCE = 1e-6
NUMBER, NUMBER_OR_NONE = "number", "number or None"  # ``Filled`` template leaves


@dataclass(frozen=True)
class Close:
    name: str
    case: str
    expect: Callable[[dict], Any] = lambda key: key
    at: tuple[str, ...] = ()


@dataclass(frozen=True)
class Filled:
    name: str
    template: Any


@dataclass(frozen=True)
class Policies:
    pass


Check = Close | Filled | Policies


@dataclass(frozen=True)
class Verdict:
    fraction: float  # of the cell's points
    message: str
    partial: bool = False  # a share (the policy cell) rather than all or nothing


class Wrong(Exception):
    """A handed-in answer that does not pass; the message is the student's feedback."""


def handed_in(outputs: list) -> dict | None:
    """The answers a cell handed in: its last ``ANSWERS_MIME`` output, if it is a JSON object
    of bounded size; None when there is none."""
    found = None
    for output in outputs:
        data = output.get("data") or {}
        if ANSWERS_MIME in data:
            found = data[ANSWERS_MIME]
    if not isinstance(found, dict):
        return None
    try:
        size = len(json.dumps(found, allow_nan=True))
    except (TypeError, ValueError, RecursionError):
        return None
    return found if size <= ANSWERS_MAX_BYTES else None


def names(checks: tuple[Check, ...]) -> set[str]:
    """The answer names a cell with ``checks`` must hand in."""
    return {check.name for check in checks if not isinstance(check, Policies)}


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _label(name: str, keys) -> str:
    return name + "".join(f"[{key!r}]" for key in keys)


def close(answer, expected, label: str) -> None:
    """``answer`` matches ``expected`` at every key ``expected`` has; ``Wrong`` at the first
    difference, naming the place and the student's value only."""
    if isinstance(expected, dict):
        if not isinstance(answer, dict):
            raise Wrong(f"{label} 应该是一个 dict")
        for key, sub in expected.items():
            if key not in answer:
                raise Wrong(f"{label} 缺少键 {key!r}")
            close(answer[key], sub, f"{label}[{key!r}]")
        return
    if _is_number(expected):
        ok = _is_number(answer) and abs(answer - expected) <= TOLERANCE * max(1.0, abs(expected))
    else:
        ok = answer == expected and type(answer) is type(expected)
    if not ok:
        raise Wrong(f"{label} 不对:你的答案是 {answer!r}")


def filled(answer, template, label: str) -> None:
    """``answer`` has ``template``'s keys with a finite number (or None where allowed) at
    every leaf."""
    if isinstance(template, dict):
        if not isinstance(answer, dict):
            raise Wrong(f"{label} 应该是一个 dict")
        missing = [key for key in template if key not in answer]
        if missing:
            raise Wrong(f"{label} 缺少键 {missing}")
        for key, sub in template.items():
            filled(answer[key], sub, f"{label}[{key!r}]")
        return
    if not (_is_number(answer) or (template == NUMBER_OR_NONE and answer is None)):
        raise Wrong(f"{label} 应该是一个有限的数字,现在是 {answer!r}")


def _value(answers: dict, name: str, at: tuple[str, ...]):
    if name not in answers:
        raise Wrong(f"没有交出 {name}(这个单元格要先运行到最后一行)")
    value = answers[name]
    for depth, key in enumerate(at):
        if not isinstance(value, dict) or key not in value:
            raise Wrong(f"{_label(name, at[:depth])} 缺少键 {key!r}")
        value = value[key]
    return value


def judge(
    checks: tuple[Check, ...],
    answers: dict | None,
    key: Callable[[str], dict],
    policies: Callable[[], tuple[float, str]],
) -> Verdict:
    """The verdict of one cell: ``key(case)`` gives an answer key, ``policies()`` the policy
    grading's (fraction, report text)."""
    if any(isinstance(check, Policies) for check in checks):
        fraction, text = policies()
        return Verdict(fraction, text, partial=True)
    if answers is None:
        return Verdict(0.0, "这个单元格没有交出答案(它没有运行到最后一行)")
    try:
        for check in checks:
            if isinstance(check, Close):
                expected = check.expect(key(check.case))
                close(_value(answers, check.name, check.at), expected, _label(check.name, check.at))
            else:
                filled(_value(answers, check.name, ()), check.template, check.name)
    except Wrong as wrong:
        return Verdict(0.0, str(wrong))
    return Verdict(1.0, "评分器核对:通过")


def policy_files(unit: Unit, folder: Path) -> tuple[list[Path], list[str]]:
    """The unit's editable files in the notebook's folder, and the names of those missing."""
    present = [folder / name for name in unit.editable if (folder / name).is_file()]
    missing = [name for name in unit.editable if not (folder / name).is_file()]
    return present, missing
