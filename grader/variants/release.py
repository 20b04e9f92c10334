"""``infralab release student --roster/--student``: one lab folder and zip per student.

    out/<id>/infra-lab-<unit>/       the student's lab folder (their own public traces and
    out/<id>/infra-lab-<unit>.zip    expected snapshots), and the same as a zip
    out/variants.csv                 id -> variant hash, for staff (merged across runs)

Every folder is the assembled lab folder of the student's variant (``store.variant_unit``,
``grader.labfolder``), so it holds what the fixed release holds and nothing more. Everything is
built in a private staging folder inside ``out`` first and moved into place only when every
student is done: a failure leaves ``out`` as it was.
"""

from __future__ import annotations

import csv
import io
import shutil
import tempfile
from pathlib import Path

from ..course import release
from ..jsonio import write_text_atomic
from ..labfolder import assemble
from ..units import Unit
from .keys import variant_key
from .store import variant_unit

INDEX = "variants.csv"


def release_students(unit: Unit, ids: list[str], secret: bytes, out: Path) -> list[Path]:
    """Write each student's lab folder and zip under ``out/<id>/``; the folders written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".release-", dir=out))
    try:
        hashes = {}
        for student in ids:
            variant = variant_unit(unit, variant_key(secret, student))
            folder = staging / student
            assemble(variant, folder / release.lab_root(unit))
            release.build_student_zip(variant, folder / release.student_zip_name(unit))
            hashes[student] = variant.variant_hash
        for student in ids:
            _replace(staging / student, out / student, staging)
        _write_index(out / INDEX, hashes)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [out / student for student in ids]


def _replace(new: Path, place: Path, staging: Path) -> None:
    """Move ``new`` to ``place``; an older folder there goes into the staging folder first."""
    if place.exists():
        place.rename(staging / f".old-{place.name}")
    new.chmod(0o755)
    new.rename(place)


def _write_index(path: Path, hashes: dict[str, str]) -> None:
    rows = {}
    if path.is_file():
        with open(path, newline="", encoding="utf-8") as handle:
            rows = {row["id"]: row["variant"] for row in csv.DictReader(handle)}
    rows.update(hashes)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["id", "variant"])
    writer.writerows(sorted(rows.items()))
    write_text_atomic(path, text.getvalue())
