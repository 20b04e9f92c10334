"""Small JSON helpers shared by the staff tools: atomic writes, strict reads."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


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
