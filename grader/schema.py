"""JSON Schema checks for the files staff write by hand (unit.yaml, graded cases, trace specs).

The schemas live in ``grader/schemas/<name>.schema.json``. Each error becomes one line naming
where it is, in the words staff saw before the schemas existed. Three annotations steer the
wording (jsonschema ignores keys it does not know):

- ``x-message``: the text when this node fails (``{value!r}`` is the offending value);
- ``x-missing``: on an object, the text for missing fields (``{field}``: the first one,
  ``{fields}``: all of them; default ``field '{field}' is missing``);
- ``x-up``: how many trailing steps of the failing node's path to leave out of the location.
  By default a value's message is placed at its parent (``generate: 'count' must be an integer
  >= 1``) and an object's missing or unknown fields at the object (``generate: field 'count' is
  missing``); ``x-up: 0`` places a value's message at the node itself (``generate: must be a
  mapping``).

When several errors are found, the one nearest the top of the document wins, then the schema's
keyword order (type before unknown fields before missing fields before the fields' values).
"""

from __future__ import annotations

import json
import math
import sys
from functools import cache
from pathlib import Path

from servesim.fields import unknown_field_message

SCHEMA_DIR = Path(__file__).with_name("schemas")


class SchemaError(ValueError):
    """A document that does not match its schema; the message is one line."""


def _is_number(checker, value) -> bool:
    """JSON numbers as staff mean them: no booleans, no NaN or infinity (YAML has both)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_integer(checker, value) -> bool:
    """Integers as written (``3``), not floats that happen to be whole (``3.0``)."""
    return isinstance(value, int) and not isinstance(value, bool)


# jsonschema's optional string-format libraries (the nbgrader extra pulls most of them in)
_FORMAT_MODULES = (
    "fqdn",
    "idna",
    "isoduration",
    "jsonpointer",
    "rfc3339_validator",
    "rfc3986_validator",
    "rfc3987",
    "rfc3987_syntax",
    "uri_template",
    "webcolors",
)


def jsonschema_module():
    """``jsonschema``, imported without its optional string-format libraries.

    Where they are installed, importing jsonschema loads every one of them (``rfc3987_syntax``
    compiles a grammar, ``isoduration`` brings in ``arrow`` and ``dateutil``): about a second
    in every staff command. No schema of ours uses string formats, so they are kept out of
    jsonschema's import alone and allowed again afterwards.
    """
    if "jsonschema" not in sys.modules:
        blocked = [name for name in _FORMAT_MODULES if name not in sys.modules]
        for name in blocked:
            sys.modules[name] = None  # makes its import raise ImportError
        try:
            import jsonschema
        finally:
            for name in blocked:
                del sys.modules[name]
    import jsonschema

    return jsonschema


@cache
def _validator(name: str):
    jsonschema = jsonschema_module()
    Draft202012Validator, validators = jsonschema.Draft202012Validator, jsonschema.validators

    # the schemas themselves are checked against the metaschema by the tests, not here
    schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    types = Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"number": _is_number, "integer": _is_integer}
    )
    return validators.extend(Draft202012Validator, type_checker=types)(schema)


def validate(doc, name: str, where: str) -> None:
    """Raise ``SchemaError`` for the first problem of ``doc`` under schema ``name``."""
    errors = list(_validator(name).iter_errors(doc))
    if errors:
        first = min(enumerate(errors), key=lambda item: (len(item[1].absolute_path), item[0]))
        raise SchemaError(_message(first[1], where))


def _where(where: str, path) -> str:
    """``where`` then the path inside the document: ``generate.arrivals``, ``policies #2``."""
    inner = ""
    for part in path:
        inner += f" #{part + 1}" if isinstance(part, int) else f".{part}" if inner else str(part)
    return f"{where}: {inner}" if inner else where


def _message(error, where: str) -> str:
    schema, path = error.schema, list(error.absolute_path)
    if error.validator == "additionalProperties":
        message = unknown_field_message(error.instance, schema.get("properties", {}))
        return f"{_where(where, path)}: {message or error.message}"
    if error.validator == "required":
        missing = [key for key in error.validator_value if key not in error.instance]
        template = schema.get("x-missing", "field '{field}' is missing")
        text, up = template.format(field=missing[0], fields=", ".join(missing)), 0
    else:
        text, up = schema.get("x-message", error.message).format(value=error.instance), 1
    up = schema.get("x-up", up)
    return f"{_where(where, path[: len(path) - up])}: {text}"
