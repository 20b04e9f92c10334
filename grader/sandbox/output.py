"""Text of what a child wrote to stdout/stderr, cut to its last ``OUTPUT_LIMIT`` bytes.

Run files and case outputs come back over the runner's protocol (``protocol``), never from
files the child could still change; the runner opens them without following links and
without blocking, and sends only regular one-link files within the case's cap.
"""

from __future__ import annotations

import os
from typing import BinaryIO

OUTPUT_LIMIT = 64 * 1024  # characters of stdout/stderr kept for feedback


def tail_text(handle: BinaryIO) -> str:
    """The last ``OUTPUT_LIMIT`` bytes of an open file as text, with a note of what was cut."""
    handle.flush()
    size = os.fstat(handle.fileno()).st_size
    handle.seek(max(0, size - OUTPUT_LIMIT))
    text = handle.read(OUTPUT_LIMIT).decode("utf-8", "replace")
    if size > OUTPUT_LIMIT:
        text = f"[... {size - OUTPUT_LIMIT} earlier bytes cut ...]\n" + text
    return text


def cut_note(tail: bytes, size: int) -> str:
    """A tail the runner sent, as text, with a note of how much came before it."""
    text = tail.decode("utf-8", "replace")
    if size > len(tail):
        text = f"[... {size - len(tail)} earlier bytes cut ...]\n" + text
    return text
