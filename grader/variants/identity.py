"""Whose variant a submission is graded against, and that variant as a unit.

    student_from_metadata(path) -> id    # Gradescope's /autograder/submission_metadata.json
    graded_unit(unit, student, secret_file) -> Unit   # a bundle's shipped variant needs no secret

Gradescope documents ``users`` as a list of ``{email, id, name}`` (its roster export adds the
SID, and the metadata carries it as ``sid`` where the course set one); the roster id is that
SID, or the email for a student without one. A group submission is graded against the variant
of its first user. The id is checked like a roster id before it names anything.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..units import Unit, UnitError
from .keys import load_secret, variant_key
from .roster import check_id
from .store import variant_unit, varies


def student_from_metadata(path: Path) -> str:
    """The first user's ``sid`` (when present and not empty), else their ``email``."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UnitError(f"submission metadata {path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise UnitError(f"submission metadata {path}: not readable JSON ({exc})") from None
    users = doc.get("users") if isinstance(doc, dict) else None
    first = users[0] if isinstance(users, list) and users else None
    if not isinstance(first, dict):
        raise UnitError(f"submission metadata {path}: no 'users' list with a user in it")
    for field in ("sid", "email"):
        value = first.get(field)
        if isinstance(value, (str, int)) and str(value).strip():
            return check_id(str(value).strip(), f"submission metadata {path}: users[0].{field}")
    raise UnitError(f"submission metadata {path}: users[0] has neither 'sid' nor 'email'")


def graded_unit(unit: Unit, student: str, secret_file: str | Path | None = None) -> Unit:
    """The variant of ``student``: in a Gradescope bundle the one shipped for them (no secret
    there, ``bundle.shipped_variant``), else made from the reference and cached on first use."""
    from . import bundle

    if bundle.ships_variants(unit):
        return bundle.shipped_variant(unit, check_id(student, "student id"))
    return variant_for(unit, student, load_secret(secret_file))


def variant_for(unit: Unit, student: str, secret: bytes) -> Unit:
    """``graded_unit`` with the secret already read (a batch reads it once)."""
    if not varies(unit):
        raise UnitError(f"variants: unit {unit.id} declares no variants (unit.yaml 'variants')")
    return variant_unit(unit, variant_key(secret, check_id(student, "student id")))
