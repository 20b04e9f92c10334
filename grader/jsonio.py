"""Small JSON helpers shared by the staff tools: atomic writes, strict reads."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def dumps(doc, indent: int | None = 2) -> str:
    return json.dumps(doc, indent=indent, ensure_ascii=False, allow_nan=False) + "\n"


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
