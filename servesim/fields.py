"""Reading a hand-written JSON file's fields: unknown fields in one message, and typed reads.

A typo such as ``deadlinMs`` must not pass silently as an extra field, so every reader of the
lab's JSON files refuses fields it does not know, and says which known field was probably
meant (``difflib``, the standard library, so the lab folder needs nothing else)::

    request 'r3': unknown field 'deadlinMs' (did you mean 'deadlineMs'?)

``Fields`` reads one JSON object field by field (a protocol's), each error naming the file and
the field's path.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known field ``name`` most likely misspells, or None when none is close."""
    import difflib  # only when a field is unknown: reading a valid file never loads it

    matches = difflib.get_close_matches(str(name), sorted(known), n=1, cutoff=0.6)
    return matches[0] if matches else None


def unknown_field_message(fields: Iterable[str], known: Iterable[str]) -> str | None:
    """``unknown field 'x' (did you mean 'y'?)`` for the first of ``fields`` not in ``known``
    (in sorted order), or None when every field is known. Without a close match the message
    lists the known fields instead."""
    known = sorted(known)
    extra = sorted(str(name) for name in fields if name not in known)
    if not extra:
        return None
    first = extra[0]
    guess = closest(first, known)
    hint = f"did you mean '{guess}'?" if guess else f"known: {', '.join(known)}"
    more = f"; also unknown: {', '.join(extra[1:])}" if len(extra) > 1 else ""
    return f"unknown field '{first}' ({hint}){more}"


def is_number(value) -> bool:
    """A finite JSON number (a bool is not one)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_integer(value) -> bool:
    """A JSON integer (a bool is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


class Fields:
    """Typed reads of one JSON object; each error, an ``error`` (a subclass sets its own),
    names the file and the field's path."""

    error: type[ValueError] = ValueError

    def __init__(self, doc, where: str, path: str = ""):
        if not isinstance(doc, dict):
            raise self.error(
                f"{where}: {('field ' + repr(path)) if path else 'the top level'} "
                "must be a JSON object"
            )
        self.doc, self.where, self.path = doc, where, path

    def fail(self, key: str, what: str):
        name = f"{self.path}.{key}" if self.path else key
        raise self.error(f"{self.where}: field '{name}' {what}, got {self.doc.get(key)!r}")

    def only(self, allowed) -> None:
        if unknown := unknown_field_message(self.doc, allowed):
            where = f"'{self.path}': " if self.path else ""
            raise self.error(f"{self.where}: {where}{unknown}")

    def need(self, key: str):
        if key not in self.doc:
            name = f"{self.path}.{key}" if self.path else key
            raise self.error(f"{self.where}: field '{name}' is missing")
        return self.doc[key]

    def text(self, key: str, default=None) -> str:
        value = self.doc.get(key, default) if default is not None else self.need(key)
        if not isinstance(value, str) or (not value and default is None):
            self.fail(key, "must be a non-empty string")
        return value

    def number(
        self,
        key: str,
        low: float,
        high: float = math.inf,
        *,
        open_low=False,
        open_high=False,
        optional=False,
    ):
        if optional and self.doc.get(key) is None:
            return None
        value = self.need(key)
        below = value <= low if open_low else value < low
        above = value >= high if open_high else value > high
        if not is_number(value) or below or above:
            lo, hi = "(" if open_low else "[", ")" if open_high else "]"
            self.fail(key, f"must be a number in {lo}{low:g}, {high:g}{hi}")
        return float(value)

    def integer(self, key: str, low: int) -> int:
        value = self.need(key)
        if not is_integer(value) or value < low:
            self.fail(key, f"must be an integer >= {low}")
        return value

    def child(self, key: str) -> Fields:
        name = f"{self.path}.{key}" if self.path else key
        return type(self)(self.need(key), self.where, name)
