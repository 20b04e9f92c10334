"""Unknown fields in a hand-written file (trace, device profile, tier, protocol): one message.

A typo such as ``deadlinMs`` must not pass silently as an extra field, so every reader of the
lab's JSON files refuses fields it does not know, and says which known field was probably
meant (``difflib``, the standard library, so the lab folder needs nothing else)::

    request 'r3': unknown field 'deadlinMs' (did you mean 'deadlineMs'?)
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known field ``name`` most likely misspells, or None when none is close."""
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
