"""A class's variants inside the Gradescope bundle (``release autograder --roster --secret``).

The bundle holds no solutions, so it cannot make a variant's golden files itself: each
student's variant folder is made here (``store.variant_unit``) and shipped under the bundle's
own variant cache (``build/variants/<unit>/<hash>/``), with ``shipped.json`` (sha256 of each
variant key -> its folder) and the course secret as ``variant.secret``. ``run_autograder``
grades with ``--secret`` and ``--submission-metadata`` when the secret is there; the grader
then finds the student's folder through ``shipped.json``. Everything sits in the bundle's
source folder, which the sandboxed child never reads (as for the fixed hidden traces).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..labfolder import tree
from ..units import Unit
from .keys import variant_key
from .store import SHIPPED, key_digest, variant_unit

SECRET_FILE = "variant.secret"


def bundle_variants(unit: Unit, ids: list[str], secret: bytes):
    """``(files, texts)``: bundle path -> source file for every student's variant folder, and
    bundle path -> bytes for ``shipped.json`` and the secret."""
    files: dict[str, Path] = {}
    index: dict[str, str] = {}
    base = f"build/variants/{unit.id}"
    for student in ids:
        key = variant_key(secret, student)
        variant = variant_unit(unit, key)
        for rel, path in tree(variant.variant_dir).items():
            files[f"{base}/{variant.variant_hash}/{rel}"] = path
        index[key_digest(key)] = variant.variant_hash
    texts = {
        f"{base}/{SHIPPED}": (json.dumps(index, indent=1, sort_keys=True) + "\n").encode(),
        SECRET_FILE: secret + b"\n",
    }
    return files, texts
