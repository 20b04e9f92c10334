"""JSON Schema validation of run files against the lab's published schemas."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

from ..units import Unit


@cache
def _validator(schema_dir: str):
    from referencing import Registry, Resource

    from ..schema import jsonschema_module

    jsonschema = jsonschema_module()

    folder = Path(schema_dir)
    run_schema = json.loads((folder / "run.schema.json").read_text(encoding="utf-8"))
    trace_schema = json.loads((folder / "trace.schema.json").read_text(encoding="utf-8"))
    registry = Registry().with_resources(
        [
            (run_schema["$id"], Resource.from_contents(run_schema)),
            (trace_schema["$id"], Resource.from_contents(trace_schema)),
            ("trace.schema.json", Resource.from_contents(trace_schema)),
        ]
    )
    return jsonschema.Draft202012Validator(run_schema, registry=registry)


_FIELD = re.compile(r"^[A-Za-z]{1,40}$")


def validate_run_file(unit: Unit, document) -> str | None:
    """The first JSON Schema error of a run file as ``path: message`` (None when valid).

    The path keeps field names and drops list positions, so it is safe for hidden cases.
    """
    validator = _validator(str(unit.lab_dir / "schemas"))
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(document))
    if error is None:
        return None
    # keep schema field names only: list positions and anything else a run could choose go
    names = [p for p in error.absolute_path if isinstance(p, str) and _FIELD.match(p)]
    path = "/".join(names) or "top level"
    return f"at {path}: {error.validator} check failed"
