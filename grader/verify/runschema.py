"""JSON Schema validation of run files against the lab's published schemas."""

from __future__ import annotations

import itertools
import json
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
    return jsonschema.Draft202012Validator(inline_refs(run_schema, trace_schema))


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


_FIELD = re.compile(r"^[A-Za-z]{1,40}$")
ERRORS_WEIGHED = 64


def validate_run_file(unit: Unit, document) -> str | None:
    """The first JSON Schema error of a run file as ``path: message`` (None when valid).

    The path keeps field names and drops list positions, so it is safe for hidden cases. The
    best of the first ``ERRORS_WEIGHED`` errors is reported: a file with millions of broken
    entries costs no more than one with a few.
    """
    validator = _validator(str(unit.lab_dir / "schemas"))
    from jsonschema.exceptions import best_match

    error = best_match(itertools.islice(validator.iter_errors(document), ERRORS_WEIGHED))
    if error is None:
        return None
    # keep schema field names only: list positions and anything else a run could choose go
    names = [p for p in error.absolute_path if isinstance(p, str) and _FIELD.match(p)]
    path = "/".join(names) or "top level"
    return f"at {path}: {error.validator} check failed"
