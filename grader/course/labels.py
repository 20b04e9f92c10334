"""Stable names of hidden cases in student views: ``hidden-<6 hex digits>``.

A hidden case's id names its trace and flags, so student views call it by a label instead. The
label is a keyed hash of the case id (HMAC-SHA256 with the unit's label key), not its position:
adding, removing or reordering cases in unit.yaml leaves every other label where it was, so a
student comparing two submissions compares the same cases. The key makes the label useless for
guessing ids: without it, ``paged-kv-b512-m96`` could be found by hashing likely names.

The key is ``traces/<unit>/golden/labels.key`` (hidden material: never in the student zip, in the
Gradescope bundle with the golden files). ``infralab golden`` writes it once when it is missing;
deleting it renames every hidden case. Two hidden cases whose labels would collide both get more
digits (``hidden-<8 hex digits>``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path

from ..units import Unit, UnitError

KEY_NAME = "labels.key"
DIGITS = 6
PREFIX = "hidden-"


def key_path(unit: Unit) -> Path:
    return unit.traces_dir / "golden" / KEY_NAME


def write_key(unit: Unit) -> Path | None:
    """Write a fresh label key when the unit has none; the path written, else None."""
    path = key_path(unit)
    if path.is_file():
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(secrets.token_hex(16) + "\n", encoding="ascii")
    return path


def _key(unit: Unit) -> bytes:
    path = key_path(unit)
    try:
        text = path.read_text(encoding="ascii").strip()
        key = bytes.fromhex(text)
    except (OSError, ValueError):
        raise UnitError(
            f"the label key of hidden cases is missing or unreadable ({path.name}); "
            f"run: infralab golden --unit {unit.id}"
        ) from None
    if len(key) < 16:
        raise UnitError(f"{path.name}: the label key must hold at least 16 bytes (32 hex digits)")
    return key


def hidden_labels(unit: Unit, case_ids) -> dict[str, str]:
    """``case id -> hidden-<hex>`` for the given hidden case ids (an empty dict for none)."""
    ids = list(case_ids)
    if not ids:
        return {}
    key = _key(unit)
    digests = {cid: hmac.new(key, cid.encode(), hashlib.sha256).hexdigest() for cid in ids}
    short = {cid: d[:DIGITS] for cid, d in digests.items()}
    counts: dict[str, int] = {}
    for value in short.values():
        counts[value] = counts.get(value, 0) + 1
    return {
        cid: PREFIX + (short[cid] if counts[short[cid]] == 1 else digests[cid][: DIGITS + 2])
        for cid in ids
    }
