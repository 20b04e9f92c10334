"""JSON text laid out exactly as ``json.dumps(value, indent=2, ensure_ascii=False)`` lays it
out, built from pieces: ``encode`` for a whole value, ``container`` for a container whose
members come as text, ``key_text`` and ``value_text`` for one member. Every scalar goes through
``json``'s own C encoder, so floats and strings are spelled as ``json`` spells them; a container
of scalars only is encoded in one call, with the newline and the next level's indent as its item
separator.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Iterator
from itertools import islice, repeat

INDENT = "  "
SCALARS = (str, int, float, bool, type(None))

scalar = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode
FLAT: dict[int, object] = {}  # level -> encoder of a container of scalars at that level


def flat(container, level: int) -> str:
    """``container`` (not empty, every member a scalar) as ``json.dumps(indent=2)`` writes it
    at nesting ``level``."""
    encoder = FLAT.get(level)
    if encoder is None:
        pad = "\n" + INDENT * (level + 1)
        encoder = json.JSONEncoder(
            ensure_ascii=False, allow_nan=False, separators=("," + pad, ": ")
        )
        encoder = FLAT[level] = encoder.encode
    text = encoder(container)
    return f"{text[0]}\n{INDENT * (level + 1)}{text[1:-1]}\n{INDENT * level}{text[-1]}"


def encode(value, level: int = 0) -> str:
    """``value`` as ``json.dumps(value, indent=2, ensure_ascii=False)`` writes it at ``level``."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        if all(isinstance(v, SCALARS) for v in value.values()):
            return flat(value, level)
        return "".join(
            container(([key_text(k), encode(v, level + 1)] for k, v in value.items()), level, "{}")
        )
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        if all(isinstance(v, SCALARS) for v in value):
            return flat(value, level)
        return "".join(container(([encode(v, level + 1)] for v in value), level, "[]"))
    return scalar(value)


def key_text(key: str) -> str:
    """A member's key and its colon (run files have string keys only)."""
    return scalar(key) + ": "


def container(members: Iterable[Iterable[str]], level: int, brackets: str) -> Iterator[str]:
    """A container at ``level`` whose members come as pieces of text (each member's own)."""
    pad = "\n" + INDENT * (level + 1)
    first = True
    for pieces in members:
        yield (brackets[0] if first else ",") + pad
        yield from pieces
        first = False
    yield brackets if first else "\n" + INDENT * level + brackets[1]


def json_list(texts: Iterable[str], level: int, block: int) -> Iterator[str]:
    """A list at ``level`` whose members come as texts, ``block`` members joined per piece
    (few pieces to write, and no more than a block's text held at once)."""
    pad = "\n" + INDENT * (level + 1)
    texts = iter(texts)
    opening, separator = "[" + pad, "," + pad
    while members := list(islice(texts, block)):
        yield opening + separator.join(members)
        opening = separator
    yield "[]" if opening[0] == "[" else "\n" + INDENT * level + "]"


def number(value: float) -> str:
    """A float's JSON text; like ``json`` with ``allow_nan=False``, refuses NaN and infinities."""
    if not math.isfinite(value):
        raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
    return float.__repr__(value)


def texts(values: list, recurring: bool = False) -> list[str]:
    """The JSON text of each scalar of ``values``, as ``value_text`` spells it.

    A list of finite floats (a run's times) or of integers is spelled by C-level ``map``s;
    ``recurring`` (few distinct values, e.g. the gaps between steps): each distinct float is
    spelled once. Anything else, or a value ``json`` refuses, takes ``value_text`` one by one
    (which raises as ``json`` does).
    """
    kinds = set(map(type, values))
    if kinds == {float} and all(map(math.isfinite, values)):
        if not recurring:
            return floats_text(values)
        distinct = list(set(values))
        spelled = dict(zip(distinct, floats_text(distinct)))
        if 0.0 in spelled and min(map(math.copysign, repeat(1.0), values)) < 0:
            spelled[0.0] = None  # 0.0 and -0.0: one key, two spellings
            out = list(map(spelled.__getitem__, values))
            return [float.__repr__(v) if t is None else t for t, v in zip(out, values)]
        return list(map(spelled.__getitem__, values))
    if kinds == {int}:
        return list(map(int.__repr__, values))
    return list(map(value_text, values))


def floats_text(values: list[float]) -> list[str]:
    """``float.__repr__`` of each of ``values`` (finite floats), by orjson where it spells
    them the same.

    orjson writes the shortest text that reads back as the same float, as ``repr`` does, and
    lays it out as ``repr`` does except below 1e-4 (``0.00005``, ``1e-9`` for ``5e-05``,
    ``1e-09``): it is used when no value is that small (zero aside) and the orjson installed
    spells ``_PROBES`` as ``repr`` does; ``tests/grader/test_fullwrite.py`` compares the two.
    """
    orjson = _orjson()
    if orjson and min(map(abs, filter(None, values)), default=1.0) >= 1e-4:
        listed = values if type(values) is list else list(values)  # a column: array("d")
        text = orjson.dumps(listed).decode()
        return text[1:-1].split(",") if len(text) > 2 else []
    return list(map(float.__repr__, values))


# floats whose spellings show a layout: exponents, integral values, the shortest round trip
_PROBES = [0.0, -0.0, 1e-4, 0.1, 1.5, 100.0, 123.456, 5652005.528996588, 1e15, 1e16]
_PROBES += [1.2345e17, -2.5e22, 1.7976931348623157e308, 1e-10, 2.5e-300, 20.299999999813735]


@functools.cache
def _orjson():
    """orjson, where it is installed and spells ``_PROBES`` as ``repr`` does (else None)."""
    try:
        import orjson
    except ImportError:
        return None
    same = orjson.dumps(_PROBES).decode() == "[" + ",".join(map(repr, _PROBES)) + "]"
    return orjson if same else None


def value_text(value) -> str:
    """A scalar's JSON text, as ``json``'s C encoder writes it."""
    kind = type(value)
    if kind is float:
        return number(value)
    if kind is int:
        return int.__repr__(value)
    return scalar(value)
