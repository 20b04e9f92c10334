"""JSON Schema validation of run files against the lab's published schemas."""

from __future__ import annotations

import itertools
import json
import math
import re
from functools import cache
from pathlib import Path

from ..units import Unit


@cache
def _validator(schema_dir: str):
    from ..schema import jsonschema_module

    jsonschema = jsonschema_module()
    folder = Path(schema_dir)
    run_schema = json.loads((folder / "run.schema.json").read_text(encoding="utf-8"))
    trace_schema = json.loads((folder / "trace.schema.json").read_text(encoding="utf-8"))
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
    return fast(inline_refs(run_schema, trace_schema))


ANNOTATIONS = {"description", "title", "$comment"}


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


_KEYWORDS = {
    "type",
    "minimum",
    "exclusiveMinimum",
    "minLength",
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
} | ANNOTATIONS
_DECIDED = {"type", "required"} | ANNOTATIONS  # an ``if`` whose answer _holds knows both ways


def _passes(schema, value) -> bool:
    """True only where ``value`` certainly satisfies ``schema``; False where it fails, or where
    the schema uses a keyword not restated here (the validator then decides). Each keyword is
    checked as Draft 2020-12 states it, on the values a JSON parser makes."""
    if schema is True:
        return True
    if not isinstance(schema, dict) or not schema.keys() <= _KEYWORDS:
        return False
    if "if" in schema:
        holds = _holds(schema["if"], value)
        if holds is None or not _passes(schema.get("then" if holds else "else", True), value):
            return False
    if not _of_type(schema, value):
        return False
    if "enum" in schema and not _same(value, schema["enum"]):
        return False
    if "const" in schema and not _same(value, [schema["const"]]):
        return False
    if type(value) in (int, float):
        if not math.isfinite(value):
            return False
        if "minimum" in schema and not value >= schema["minimum"]:
            return False
        if "exclusiveMinimum" in schema and not value > schema["exclusiveMinimum"]:
            return False
    elif type(value) is str:
        return len(value) >= schema.get("minLength", 0)
    elif type(value) is list:
        return _list_passes(schema, value)
    elif type(value) is dict:
        return _dict_passes(schema, value)
    return True


def _holds(schema, value) -> bool | None:
    """Whether ``value`` satisfies ``schema``, for a schema of ``type`` and ``required`` only
    (the condition of an ``if``); None for any other schema."""
    if not isinstance(schema, dict) or not schema.keys() <= _DECIDED:
        return None
    if not _of_type(schema, value):
        return False
    return type(value) is not dict or all(name in value for name in schema.get("required", []))


def _of_type(schema: dict, value) -> bool:
    """``value`` is of one of the schema's ``type`` kinds (any kind when it names none)."""
    kinds = schema.get("type")
    if kinds is None:
        return True
    kinds = [kinds] if isinstance(kinds, str) else kinds
    return any(_is(kind, value) for kind in kinds)


def _same(value, allowed: list) -> bool:
    """``value`` equals one of ``allowed``, both strings or both numbers (JSON Schema compares
    numbers by value: 1 equals 1.0; booleans and other kinds are left to the validator)."""
    if type(value) is str:
        return all(type(a) is str for a in allowed) and value in allowed
    numbers = (int, float)
    return type(value) in numbers and all(type(a) in numbers for a in allowed) and value in allowed


def _list_passes(schema: dict, value: list) -> bool:
    prefix = schema.get("prefixItems", [])
    if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value)):
        return False
    if not all(_passes(s, v) for s, v in zip(prefix, value, strict=False)):
        return False
    if "items" in schema:
        return all(_passes(schema["items"], v) for v in value[len(prefix) :])
    return True


def _dict_passes(schema: dict, value: dict) -> bool:
    properties = schema.get("properties", {})
    if not all(name in value for name in schema.get("required", [])):
        return False
    if not all(_passes(properties[k], v) for k, v in value.items() if k in properties):
        return False
    extra = schema.get("additionalProperties", True)
    if extra is True:
        return True
    # additionalProperties: false fails any other field (_passes(False, ...) is False)
    return all(_passes(extra, v) for k, v in value.items() if k not in properties)


def _is(kind: str, value) -> bool:
    """JSON Schema's type ``kind`` for the values a JSON parser makes."""
    if kind == "integer":
        return type(value) is int
    if kind == "number":
        return type(value) in (int, float)
    if kind == "string":
        return type(value) is str
    if kind == "null":
        return value is None
    if kind == "object":
        return type(value) is dict
    if kind == "array":
        return type(value) is list
    return kind == "boolean" and type(value) is bool


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
