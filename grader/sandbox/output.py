"""Reading back what the child wrote, trusting nothing about it.

Every file comes from an untrusted process: it is opened without following links and without
blocking (a FIFO must not hang the grader), and only a regular file is read, within a size cap.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import BinaryIO

OUTPUT_LIMIT = 64 * 1024  # characters of stdout/stderr kept for feedback


def open_untrusted(path: Path) -> BinaryIO:
    """``path`` opened read-only with ``O_NOFOLLOW | O_NONBLOCK`` (``OSError`` where it
    cannot be: absent, a symbolic link, ...); the caller checks what it is before reading."""
    return os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb")


def read_output(path: Path, cap: int) -> tuple[bytes | None, str | None]:
    """The run file if it is a regular file (not a link, FIFO, device) of at most ``cap`` bytes.

    Returns (data, None), (None, None) when there is no file, or (None, why it was rejected).
    """
    try:
        handle = open_untrusted(path)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot open it safely ({exc.strerror})"
    with handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None, "not a regular file"
        if info.st_nlink != 1:
            return None, "has other hard links"
        if info.st_size > cap:
            return None, f"larger than {cap >> 20} MB"
        data = handle.read(cap + 1)
    if len(data) > cap:
        return None, f"larger than {cap >> 20} MB"
    return data, None


def tail_text(handle: BinaryIO) -> str:
    """The last ``OUTPUT_LIMIT`` bytes of an open file as text, with a note of what was cut."""
    handle.flush()
    size = os.fstat(handle.fileno()).st_size
    handle.seek(max(0, size - OUTPUT_LIMIT))
    text = handle.read(OUTPUT_LIMIT).decode("utf-8", "replace")
    if size > OUTPUT_LIMIT:
        text = f"[... {size - OUTPUT_LIMIT} earlier bytes cut ...]\n" + text
    return text


def read_tail(path: Path) -> tuple[str, int]:
    """(last ``OUTPUT_LIMIT`` bytes as text, size) of a file the child wrote (regular only)."""
    try:
        handle = open_untrusted(path)
    except OSError:
        return "", 0
    with handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return "", 0
        return tail_text(handle), info.st_size


def read_status(path: Path) -> tuple[bool, int | None]:
    """(found, exit code) from a case's status file; a junk file counts as not found."""
    data, error = read_output(path, 4096)
    if data is None or error:
        return False, None
    try:
        code = json.loads(data)["code"]
    except (ValueError, KeyError, TypeError):
        return False, None
    if not isinstance(code, int) or isinstance(code, bool) or not -64 < code < 256:
        return False, None
    return True, code
