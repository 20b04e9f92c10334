"""Text of what a child wrote to stdout/stderr, cut to its last ``OUTPUT_LIMIT`` bytes, with
every control character but newline and tab shown as an escape (``printable``): the text
reaches a TA's terminal and every report, where an escape sequence, a carriage return or a
bidirectional override could redraw or reorder what the grader itself printed.

Run files and case outputs come back over the runner's protocol (``protocol``), never from
files the child could still change; the runner opens them without following links and
without blocking, and sends only regular one-link files within the case's cap.
"""

from __future__ import annotations

import os
import re
from typing import BinaryIO

OUTPUT_LIMIT = 64 * 1024  # characters of stdout/stderr kept for feedback
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with each control character except newline and tab (C0, DEL, C1, and the
    bidirectional marks and overrides) written as a visible escape such as ``\\x1b``."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def tail_text(handle: BinaryIO) -> str:
    """The last ``OUTPUT_LIMIT`` bytes of an open file as text, with a note of what was cut."""
    handle.flush()
    size = os.fstat(handle.fileno()).st_size
    handle.seek(max(0, size - OUTPUT_LIMIT))
    text = printable(handle.read(OUTPUT_LIMIT).decode("utf-8", "replace"))
    if size > OUTPUT_LIMIT:
        text = f"[... {size - OUTPUT_LIMIT} earlier bytes cut ...]\n" + text
    return text


def cut_note(tail: bytes, size: int) -> str:
    """A tail the runner sent, as text, with a note of how much came before it."""
    text = printable(tail.decode("utf-8", "replace"))
    if size > len(tail):
        text = f"[... {size - len(tail)} earlier bytes cut ...]\n" + text
    return text
