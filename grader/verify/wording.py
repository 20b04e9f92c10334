"""How findings name what they are about: an event (``event #k at t ms (what it holds)``), a
batch, an id. Bounded whatever a run holds: a few members of each kind, then how many more, and
at most ``SHOWN_ID_CHARS`` characters of an id."""

from __future__ import annotations

from dataclasses import dataclass

from .problems import fmt_ms


@dataclass(slots=True)
class Where:
    """How messages name an event (``event #k at t ms (what it holds)``), written out only when a
    message uses it: most events of a run raise none."""

    k: int
    event: dict

    def __str__(self) -> str:
        ev = self.event
        what = describe_batch(ev.get("decode", []), ev.get("prefill", []), ev.get("preempt"))
        return f"event #{self.k} at {fmt_ms(ev['startMs'])} ({what})"


SHOWN_MEMBERS = 6  # members of one kind a description lists before "and N more"
SHOWN_ID_CHARS = 40  # characters of an id a message quotes


def short_id(rid) -> str:
    """An id as messages quote it: at most ``SHOWN_ID_CHARS`` characters."""
    text = str(rid)
    return text if len(text) <= SHOWN_ID_CHARS else text[: SHOWN_ID_CHARS - 1] + "…"


def _listed(ids: list) -> str:
    shown = ", ".join(short_id(i) for i in ids[:SHOWN_MEMBERS])
    return shown + (f", and {len(ids) - SHOWN_MEMBERS} more" if len(ids) > SHOWN_MEMBERS else "")


def describe_batch(decode: list[str], prefill: list[dict], preempt=None) -> str:
    """``decode [A, S]``, ``prefill L tokens 0–2``, ``preempt [B]``, joined by ``+``.

    Bounded whatever the batch holds: a few members of each kind, then how many more.
    """
    parts = [f"preempt [{_listed(preempt)}]"] if preempt else []
    if decode:
        parts.append(f"decode [{_listed(decode)}]")
    for chunk in prefill[:SHOWN_MEMBERS]:
        start = chunk["fromToken"]
        parts.append(f"prefill {short_id(chunk['id'])} tokens {start}–{start + chunk['tokens']}")
    if len(prefill) > SHOWN_MEMBERS:
        parts.append(f"{len(prefill) - SHOWN_MEMBERS} more chunks")
    return " + ".join(parts) or "empty submission"
