"""Small JSON helpers shared by the staff tools: atomic writes, strict reads."""

from __future__ import annotations

import json
import os
import tempfile
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
_BY_FILE: dict[tuple, tuple[tuple, object]] = {}
_BY_FILE_MOST = 4096  # entries kept before the memo starts again


def by_file(path: Path, compute: Callable[[Path], T], *key) -> T:
    """``compute(path)``, remembered while the file keeps its inode, size and modification
    time (grading reads the same traces and golden files for every submission of a batch).

    ``key`` tells apart several results of one file. The result is shared between callers:
    treat it as read-only.
    """
    info = os.stat(path)
    signature = (info.st_ino, info.st_size, info.st_mtime_ns)
    memo_key = (str(path), getattr(compute, "__qualname__", repr(compute)), *key)
    hit = _BY_FILE.get(memo_key)
    if hit is not None and hit[0] == signature:
        return hit[1]  # type: ignore[return-value]
    value = compute(path)
    if len(_BY_FILE) >= _BY_FILE_MOST:
        _BY_FILE.clear()
    _BY_FILE[memo_key] = (signature, value)
    return value


def read_json(path: Path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def dumps(doc, indent: int | None = 2) -> str:
    return json.dumps(doc, indent=indent, ensure_ascii=False, allow_nan=False) + "\n"


def dumps_run_file(doc: dict, indent: int | None = 2) -> str:
    """``servesim.runfile.dumps``, by orjson where it is installed and the text is unindented.

    orjson writes the same JSON (keys in order, no spaces, UTF-8) about ten times faster than
    the standard library; numbers below 1e-4 are spelled differently (``0.00001`` for
    ``1e-05``), with the same value. Where ``json`` refuses NaN, orjson writes null: run files
    hold finite times only (traces and device profiles are checked finite).
    """
    if indent is None:
        try:
            import orjson
        except ImportError:
            pass
        else:
            return orjson.dumps(doc).decode() + "\n"
    from servesim.runfile import dumps as json_dumps

    return json_dumps(doc, indent)


_BLOCK_ITEMS = 4096  # members of a long list encoded per call by ``run_file_chunks``


def run_file_chunks(doc: dict, indent: int | None = 2) -> Iterator[str]:
    """``dumps_run_file(doc, indent)`` in pieces, for ``write_atomic``.

    Unindented (compact runs), a long list is encoded a block of members at a time and a dict
    key by key, so that no more than a block's text exists at once besides the document: the
    pieces join to exactly the one-call text, which has no whitespace to differ in. Columns
    (``array.array``, the fast path's tables: see ``_column``) are written as the lists they
    stand for, also a block at a time. Indented documents (lists only) come in one piece.
    """
    if indent is not None:
        yield dumps_run_file(doc, indent)
        return
    try:
        import orjson
    except ImportError:
        from servesim.runfile import dumps as json_dumps

        def encode(value) -> str:
            return json_dumps(value, None)[:-1]
    else:

        def encode(value) -> str:
            return orjson.dumps(value).decode()

    yield from _pieces(doc, encode)
    yield "\n"


def _pieces(value, encode: Callable[[object], str]) -> Iterator[str]:
    if isinstance(value, dict) and value:
        opening = "{"
        for key, member in value.items():
            yield opening + encode(key) + ":"
            yield from _pieces(member, encode)
            opening = ","
        yield "}"
    elif isinstance(value, array) or hasattr(value, "json_blocks"):
        yield from _column(value, encode)
    elif isinstance(value, list) and len(value) > _BLOCK_ITEMS:
        opening = "["
        for at in range(0, len(value), _BLOCK_ITEMS):
            yield opening + encode(value[at : at + _BLOCK_ITEMS])[1:-1]
            opening = ","
        yield "]"
    elif isinstance(value, list) and value and isinstance(value[0], dict | list):
        opening = "["  # a few large members (the runs): each in pieces
        for member in value:
            yield opening
            yield from _pieces(member, encode)
            opening = ","
        yield "]"
    else:
        yield encode(value)


def _column(value, encode: Callable[[object], str]) -> Iterator[str]:
    """A column (``array.array``, or an object with ``json_blocks(size)`` yielding lists, as
    the fast path's tables) as the JSON list of its values, a block at a time."""
    if isinstance(value, array):
        blocks = (
            value[at : at + _BLOCK_ITEMS].tolist() for at in range(0, len(value), _BLOCK_ITEMS)
        )
    else:
        blocks = value.json_blocks(_BLOCK_ITEMS)
    opening = "["
    for block in blocks:
        if block:
            yield opening + encode(block)[1:-1]
            opening = ","
    yield "[]" if opening == "[" else "]"


def write_text_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Write ``text`` so that readers see the old file or the new one, never a half; the
    file gets ``mode`` (0600 for anything that holds grades)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, mode)  # mkstemp makes 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, doc, indent: int | None = 2, mode: int = 0o644) -> None:
    write_text_atomic(path, dumps(doc, indent), mode)
