"""A unit's catalogue of mistakes: ``labs/<unit>/diagnoses.yaml``.

::

    kinds:
      - id: fifo                        # unique; shown in staff detail only
        check: later-started-first      # a check of schedule.py, answers.py or rejections.py
        functions: [continuous, budgeted]   # the functions under test it applies to
        text: "admitted a later request while an earlier one waited"
        mutant: continuous_shortest_first   # labs/<unit>/mutants/<mutant>.py shows it (or a list)
        params: {}                      # what the check needs (answer checks)

Entries are tried in order; the first whose check matches wins. A text is what a student reads
on a hidden case, so it may hold no digit (no id, time, size or count can be in it) and must
be one line. A unit without the file gets the fixed phrases only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..units import Unit, UnitError

FILE = "diagnoses.yaml"
MAX_TEXT = 200
_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@dataclass(frozen=True)
class Entry:
    id: str
    check: str
    functions: tuple[str, ...]
    text: str
    mutants: tuple[str, ...] = ()  # names as list_mutants gives them: "measure/x" for measure.py
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Catalogue:
    entries: tuple[Entry, ...]

    def for_function(self, function: str) -> list[Entry]:
        return [e for e in self.entries if function in e.functions]


def known_checks() -> set[str]:
    from . import answers, rejections, schedule

    return set(schedule.CHECKS) | set(answers.CHECKS) | set(rejections.PATTERNS)


def unit_functions(unit: Unit) -> dict[str, str]:
    """Every function a student writes -> the file it is in (policies and parts)."""
    from ..parts import unit_parts

    out = {}
    for policy in unit.policies:
        for name in (policy["function"], policy.get("admit")):
            if name:
                out[name] = "policies.py"
    for part in unit_parts(unit):
        for item in part.functions:
            filename, name = item.split(":", 1)
            out[name] = filename
    return out


def function_file(unit: Unit, function: str) -> str:
    """The file ``function`` lives in: as the unit's policies and parts name it, else the
    editable file of the lab folder that defines it at top level (a given function a case
    tests, such as unit 09's ``evidence``). ``UnitError`` when no file does: feedback never
    names a guessed file."""
    named = unit_functions(unit).get(function)
    if named is not None:
        return named
    for filename in unit.editable:
        if function in _top_level_functions(unit.lab_dir / filename):
            return filename
    raise UnitError(
        f"labs/{unit.id}/unit.yaml: no part, policy or editable file of the lab folder defines "
        f"the function '{function}' that a case tests"
    )


_DEFINED: dict[tuple[str, str], frozenset[str]] = {}  # by file and text: parsed once


def _top_level_functions(path) -> frozenset[str]:
    import ast

    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return frozenset()
    key = (str(path), text)
    if key not in _DEFINED:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            tree = ast.Module(body=[], type_ignores=[])
        _DEFINED[key] = frozenset(
            node.name for node in tree.body if isinstance(node, ast.FunctionDef)
        )
    return _DEFINED[key]


def case_function(unit: Unit, case) -> str:
    """The function a case tests: a script case's ``args.function``, else its policy's."""
    from ..cases import Kind

    if case.kind is Kind.SCRIPT:
        return str(case.args.get("function", ""))
    policy = next(p for p in unit.policies if p["name"] == case.policy)
    return policy["function"]


def subject(unit: Unit, case) -> str:
    """``continuous() in policies.py``: how feedback names the function a case tests."""
    from ..cases import Kind

    function = case_function(unit, case)
    filename = function_file(unit, function)
    if case.kind is not Kind.SCRIPT:
        policy = next(p for p in unit.policies if p["name"] == case.policy)
        if policy.get("admit"):
            return f"{function}() and {policy['admit']}() in {filename}"
    return f"{function}() in {filename}"


def load_catalogue(unit: Unit) -> Catalogue:
    """The unit's catalogue (empty without the file); ``UnitError`` names a bad entry."""
    path = unit.unit_dir / FILE
    if not path.is_file():
        return Catalogue(())
    text = path.read_text(encoding="utf-8")
    key = (str(path), text)
    if key not in _LOADED:
        _LOADED[key] = _load(str(path), text, unit)
    return _LOADED[key]


_LOADED: dict[tuple[str, str], Catalogue] = {}  # by file and text: loaded once per process


def _load(where: str, text: str, unit: Unit) -> Catalogue:
    import yaml

    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise UnitError(f"{where}: not valid YAML ({exc})") from None
    items = doc.get("kinds") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        raise UnitError(f"{where}: must be a mapping with a list 'kinds'")
    checks, functions = known_checks(), unit_functions(unit)
    entries, seen = [], set()
    for number, item in enumerate(items, start=1):
        entry = _entry(item, f"{where}: kinds #{number}", checks, functions, unit)
        if entry.id in seen:
            raise UnitError(f"{where}: kinds #{number}: duplicate id '{entry.id}'")
        seen.add(entry.id)
        entries.append(entry)
    return Catalogue(tuple(entries))


def _entry(item, where: str, checks: set, functions: dict, unit: Unit) -> Entry:
    if not isinstance(item, dict):
        raise UnitError(f"{where}: must be a mapping")
    unknown = sorted(set(item) - {"id", "check", "functions", "text", "mutant", "params"})
    if unknown:
        raise UnitError(f"{where}: unknown field(s) {unknown}")
    for key in ("id", "check", "text"):
        if not isinstance(item.get(key), str) or not item[key]:
            raise UnitError(f"{where}: field '{key}' must be a non-empty string")
    if not _ID.match(item["id"]):
        raise UnitError(f"{where}: id '{item['id']}' must be lower-case words joined by '-'")
    if item["check"] not in checks:
        raise UnitError(f"{where}: unknown check '{item['check']}' (known: {sorted(checks)})")
    text = item["text"]
    if re.search(r"\d", text) or "\n" in text or len(text) > MAX_TEXT:
        raise UnitError(
            f"{where}: text must be one line of at most {MAX_TEXT} characters with no digit "
            "(a hidden case's feedback names no id, time or size)"
        )
    names = item.get("functions")
    if not isinstance(names, list) or not names or not all(n in functions for n in names):
        raise UnitError(f"{where}: functions must list functions of the unit ({sorted(functions)})")
    mutants = item.get("mutant") or []
    mutants = [mutants] if isinstance(mutants, str) else mutants
    # the Gradescope bundle ships the catalogue without the mutants (each is a solution with
    # one mistake): there the names are only checked to be strings
    shipped = unit.mutants_dir.is_dir()
    for mutant in mutants:
        missing = shipped and not (unit.mutants_dir / f"{mutant}.py").is_file()
        if not isinstance(mutant, str) or missing:
            raise UnitError(f"{where}: mutant '{mutant}' is not a file of {unit.mutants_dir.name}/")
    params = item.get("params") or {}
    if not isinstance(params, dict):
        raise UnitError(f"{where}: params must be a mapping")
    return Entry(item["id"], item["check"], tuple(names), text, tuple(mutants), params)
