"""JSON Schema validation of run files against the lab's published schemas."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

from ..units import Unit


@cache
def _inlined(schema_dir: str) -> dict:
    folder = Path(schema_dir)
    run_schema = json.loads((folder / "run.schema.json").read_text(encoding="utf-8"))
    trace_schema = json.loads((folder / "trace.schema.json").read_text(encoding="utf-8"))
    return inline_refs(run_schema, trace_schema)


def inlined_schema(unit: Unit) -> dict:
    """The unit's run schema with its references inlined (``inline_refs``), read once; the
    validator and the size bounds (``verify.bounds``) both read this one."""
    return _inlined(str(unit.lab_dir / "schemas"))


@cache
def _validator(schema_dir: str):
    from ..schema import jsonschema_module

    jsonschema = jsonschema_module()
    base = jsonschema.Draft202012Validator
    plain_items = base.VALIDATORS["items"]

    def items(validator, schema_items, instance, schema):
        """Draft 2020-12's ``items``, with a shortcut for the columns of a run file: when every
        item plainly passes (``_passes``), there is no error to find; otherwise the standard
        keyword runs on the whole array and finds the same errors in the same order."""
        plain = "prefixItems" not in schema and type(instance) is list
        if plain and all(_passes(schema_items, x) for x in instance):
            return
        yield from plain_items(validator, schema_items, instance, schema)

    fast = jsonschema.validators.extend(base, {"items": items})
    return fast(_inlined(schema_dir))


ANNOTATIONS = {"description", "title", "$comment"}
BOUNDS = {"x-maxItems", "x-maxSum", "x-maxUndescribed", "x-countsPerItem"}  # verify.bounds


def inline_refs(run_schema: dict, trace_schema: dict) -> dict:
    """The run schema with every ``$ref`` (to its own ``$defs`` or to the trace schema) replaced
    by what it points to: the same checks, about twice as fast, since the validator no longer
    resolves a reference for every event and request of a run file. The schemas hold no
    recursive reference (a depth guard says so if one appears)."""
    targets = {"trace.schema.json": _without_ids(trace_schema)}
    targets |= {f"#/$defs/{name}": value for name, value in run_schema.get("$defs", {}).items()}

    def walk(node, depth: int):
        if depth > 32:
            raise ValueError("recursive $ref in the run schema")
        if isinstance(node, list):
            return [walk(item, depth + 1) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = walk(targets[node["$ref"]], depth + 1)
            rest = {k: walk(v, depth + 1) for k, v in node.items() if k != "$ref"}
            return {**target, **rest} if set(rest) <= ANNOTATIONS else {"allOf": [target, rest]}
        return {k: walk(v, depth + 1) for k, v in node.items() if k != "$defs"}

    return walk(_without_ids(run_schema), 0)


def _without_ids(schema: dict) -> dict:
    return {k: v for k, v in schema.items() if k not in ("$id", "$schema")}


_KEYWORDS = (
    {
        "type",
        "minimum",
        "exclusiveMinimum",
        "minLength",
        "maxLength",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "if",
        "then",
        "else",
    }
    | ANNOTATIONS
    | BOUNDS
)  # the bounds of our own are checked before (verify.bounds)
_DECIDED = {"type", "required"} | ANNOTATIONS  # an ``if`` whose answer _holds knows both ways
_TYPES = {
    "integer": (int,),
    "number": (int, float),
    "string": (str,),
    "null": (type(None),),
    "object": (dict,),
    "array": (list,),
    "boolean": (bool,),
}  # JSON Schema's types as the exact Python types a JSON parser makes (True is not an integer)


def _passes(schema, value) -> bool:
    """True only where ``value`` certainly satisfies ``schema``; False where it fails, or where
    the schema uses a keyword not restated here (the validator then decides). Each keyword is
    checked as Draft 2020-12 states it, on the values a JSON parser makes."""
    return _check(schema)(value)


def _check(schema) -> Callable[[object], bool]:
    """``_passes`` for one schema, as a function of the value: each schema node is turned into
    a closure once (kept for as long as the schema lives), so checking a run file with
    thousands of entries costs no keyword lookups."""
    found = _CHECKS.get(id(schema))
    if found is None or found[0] is not schema:
        found = _CHECKS[id(schema)] = (schema, _compile(schema))
    return found[1]


_CHECKS: dict[int, tuple[object, Callable[[object], bool]]] = {}


def _yes(value) -> bool:
    return True


def _no(value) -> bool:
    return False


def _compile(schema) -> Callable[[object], bool]:
    if schema is True:
        return _yes
    if not isinstance(schema, dict) or not schema.keys() <= _KEYWORDS:
        return _no
    kinds = _kinds(schema)
    values = [schema["enum"]] if "enum" in schema else []  # the lists a value must be one of
    values += [[schema["const"]]] if "const" in schema else []
    by_type = {
        int: _number(schema),
        float: _number(schema),
        str: _string(schema),
        list: _list(schema),
        dict: _dict(schema),
    }
    condition = _condition(schema)

    def check(value) -> bool:
        if kinds is not None and type(value) not in kinds:
            return False
        if values and not all(_same(value, allowed) for allowed in values):
            return False
        if condition is not None and not condition(value):
            return False
        own = by_type.get(type(value))
        return own is None or own(value)

    return check


def _kinds(schema: dict) -> tuple | None:
    """The Python types of the schema's ``type`` (None when it names none: any type)."""
    kinds = schema.get("type")
    if kinds is None:
        return None
    kinds = [kinds] if isinstance(kinds, str) else kinds
    return tuple(t for kind in kinds for t in _TYPES.get(kind, ()))


def _condition(schema: dict) -> Callable[[object], bool] | None:
    """``if``/``then``/``else`` as one check (None without ``if``): the branch the condition
    picks must pass; a condition ``_holds`` cannot decide fails the shortcut."""
    if "if" not in schema:
        return None
    holds = _holds(schema["if"])
    if holds is None:
        return _no
    then, other = _check(schema.get("then", True)), _check(schema.get("else", True))
    return lambda value: then(value) if holds(value) else other(value)


def _holds(schema) -> Callable[[object], bool] | None:
    """Whether a value satisfies ``schema``, for a schema of ``type`` and ``required`` only
    (the condition of an ``if``); None for any other schema."""
    if not isinstance(schema, dict) or not schema.keys() <= _DECIDED:
        return None
    kinds, required = _kinds(schema), schema.get("required", [])

    def holds(value) -> bool:
        if kinds is not None and type(value) not in kinds:
            return False
        return type(value) is not dict or all(name in value for name in required)

    return holds


def _same(value, allowed: list) -> bool:
    """``value`` equals one of ``allowed``, both strings or both numbers (JSON Schema compares
    numbers by value: 1 equals 1.0; booleans and other kinds are left to the validator)."""
    if type(value) is str:
        return all(type(a) is str for a in allowed) and value in allowed
    numbers = (int, float)
    return type(value) in numbers and all(type(a) in numbers for a in allowed) and value in allowed


def _number(schema: dict) -> Callable[[object], bool]:
    low, above = schema.get("minimum"), schema.get("exclusiveMinimum")

    def number(value) -> bool:
        if not math.isfinite(value):
            return False
        return (low is None or value >= low) and (above is None or value > above)

    return number


def _string(schema: dict) -> Callable[[object], bool]:
    shortest, longest = schema.get("minLength", 0), schema.get("maxLength")
    if longest is None:
        return lambda value: len(value) >= shortest
    return lambda value: shortest <= len(value) <= longest


def _list(schema: dict) -> Callable[[object], bool]:
    prefix = [_check(s) for s in schema.get("prefixItems", [])]
    fewest, most = schema.get("minItems", 0), schema.get("maxItems")
    rest = _check(schema["items"]) if "items" in schema else None

    def array(value) -> bool:
        if not fewest <= len(value) or (most is not None and len(value) > most):
            return False
        if not all(check(v) for check, v in zip(prefix, value, strict=False)):
            return False
        if rest is None:
            return True
        return all(map(rest, value[len(prefix) :] if prefix else value))

    return array


def _dict(schema: dict) -> Callable[[object], bool]:
    properties = {name: _check(s) for name, s in schema.get("properties", {}).items()}
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    # additionalProperties: false fails any other field (_check(False) is _no)
    other = None if extra is True else _check(extra)

    def obj(value) -> bool:
        if not all(name in value for name in required):
            return False
        for name, item in value.items():
            check = properties.get(name, other)
            if check is not None and not check(item):
                return False
        return True

    return obj


_FIELD = re.compile(r"^[A-Za-z]{1,40}$")
ERRORS_WEIGHED = 64


def validate_run_file(unit: Unit, document) -> str | None:
    """The first JSON Schema error of a run file as ``path: message`` (None when valid).

    The path keeps field names and drops list positions, so it is safe for hidden cases. The
    best of the first ``ERRORS_WEIGHED`` errors is reported: a file with millions of broken
    entries costs no more than one with a few.
    """
    validator = _validator(str(unit.lab_dir / "schemas"))
    if _passes(validator.schema, document):  # certainly valid: no error to look for
        return None
    from jsonschema.exceptions import best_match

    error = best_match(itertools.islice(validator.iter_errors(document), ERRORS_WEIGHED))
    if error is None:
        return None
    # keep schema field names only: list positions and anything else a run could choose go
    names = [p for p in error.absolute_path if isinstance(p, str) and _FIELD.match(p)]
    path = "/".join(names) or "top level"
    return f"at {path}: {error.validator} check failed"
