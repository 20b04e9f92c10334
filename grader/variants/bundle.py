"""A class's variants inside the Gradescope bundle (``release autograder --roster --secret``).

The bundle holds no solutions, so it cannot make a variant's golden files itself: each
student's variant folder is made on the TA's machine (``store.variant_unit``) and shipped under
the bundle's own variant cache (``build/variants/<unit>/<hash>/``), with ``shipped.json``:
sha256 of each roster id -> its variant folder. That index is all the grader needs to find a
student's variant (``shipped_variant``), so the course secret never leaves the TA's machine:
neither it nor any variant key is in the bundle, and a copy of the bundle gives nobody the
variant of a student outside the class it was built for. Everything sits in the bundle's source
folder, which the sandboxed child never reads (as for the fixed hidden traces).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..labfolder import tree
from ..units import Unit, UnitError
from .keys import variant_key
from .store import MARKER, VariantUnit, as_variant, cache_root, variant_unit

SHIPPED = "shipped.json"


def id_digest(student: str) -> str:
    return hashlib.sha256(student.encode("utf-8")).hexdigest()


def bundle_variants(unit: Unit, ids: list[str], secret: bytes):
    """``(files, texts)``: bundle path -> source file for every student's variant folder, and
    bundle path -> bytes for ``shipped.json`` (no secret, no key)."""
    files: dict[str, Path] = {}
    index: dict[str, str] = {}
    base = f"build/variants/{unit.id}"
    for student in ids:
        variant = variant_unit(unit, variant_key(secret, student))
        for rel, path in tree(variant.variant_dir).items():
            files[f"{base}/{variant.variant_hash}/{rel}"] = path
        index[id_digest(student)] = variant.variant_hash
    text = json.dumps(index, indent=1, sort_keys=True) + "\n"
    return files, {f"{base}/{SHIPPED}": text.encode()}


def ships_variants(unit: Unit) -> bool:
    """Whether this course root is a bundle that ships its class's variants."""
    return (cache_root(unit) / unit.id / SHIPPED).is_file()


def shipped_variant(unit: Unit, student: str) -> VariantUnit:
    """In a bundle (``ships_variants``): the variant made at home for ``student``; a student
    outside the roster is one error that names no hidden data."""
    index = cache_root(unit) / unit.id / SHIPPED
    name = json.loads(index.read_text(encoding="utf-8")).get(id_digest(student))
    if not isinstance(name, str) or not (index.parent / name / MARKER).is_file():
        raise UnitError(
            "this autograder holds no variant for the submission's student; staff must add "
            "the student to the roster and upload the autograder again"
        )
    return as_variant(unit, index.parent / name, name)
