"""A unit's notebook answer keys as one student's variant has them, and that student's notebook
folder at autograding.

    key_unit(unit, case) -> Unit             # where the answer key of ``case`` is computed
    notebook_unit(unit, student, secret)     # the unit a student's notebook is graded against
    own_files(variant) -> {rel: path}        # the variant's own lab files (traces, snapshots)
    overlay(variant, folder) -> [rel, ...]   # those copied into ``folder``
    autograde_config(secret) -> str          # nbgrader config lines that turn this on

The answer-key plug-in may say which lab files each key reads: ``READS = {case: (lab-relative
path, ...)}`` (``traces/burst.json``, ``protocols/notebook-sweep.json``). For a variant, a key
that reads a file the unit varies (``varied_files``: its redrawn public traces and protocols),
or whose case ``READS`` does not name, is computed on the variant itself: the lab folder with
the student's own files, the one their notebook runs in. A key that reads no varied file is the
same for every student; it is computed once for the class, on the lab folder with every varied
file taken out (``shared_unit``), so a ``READS`` entry that forgets a varied file stops that
key with an error instead of quietly reading the fixed one. Computed keys are remembered by
``grader.course.nbcheck`` under the hash of the folder they were computed on.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..labfolder import tree
from ..plugins import plugin_table
from ..units import Unit, UnitError
from . import drawn
from .identity import variant_for
from .keys import load_secret
from .store import VariantUnit, cache_root, varies

SHARED = "notebook-shared"  # the cache's folder of masked lab folders, by content hash


@dataclass(frozen=True)
class SharedUnit(Unit):
    """The fixed unit seen through its lab folder with every varied file taken out."""

    masked_lab: Path | None = None

    @cached_property
    def lab_dir(self) -> Path:
        return self.masked_lab


def fixed_unit(unit: Unit) -> Unit:
    """The unit a variant was drawn from (its own lab folder and traces)."""
    return Unit(unit.id, unit.doc, unit.course_root, unit.config_dir)


def varied_files(unit: Unit) -> set[str]:
    """Lab-relative paths of the public traces (and other lab files) and the protocols the
    unit varies."""
    files = {drawn.public_file(name) for name in drawn.public_names(unit)}
    return files | {f"protocols/{name}.json" for name in drawn.protocol_names(unit)}


def reads_varied(unit: Unit, case: str) -> bool:
    """Whether the key of ``case`` may read a file the unit varies (yes unless ``READS``
    names the case and none of its files varies)."""
    try:
        declared = plugin_table(unit, "READS", "case: (lab-relative path, ...)")
    except UnitError:  # no READS table: every key is taken to read every file
        return True
    if case not in declared:
        return True
    return bool(set(declared[case]) & varied_files(unit))


def key_unit(unit: Unit, case: str) -> Unit:
    """``unit`` itself, unless it is a variant and the key of ``case`` reads no varied file:
    then the shared unit (the same for every variant of the unit)."""
    if not isinstance(unit, VariantUnit) or reads_varied(unit, case):
        return unit
    return shared_unit(fixed_unit(unit))


def shared_unit(unit: Unit) -> SharedUnit:
    """``unit`` with a lab folder that lacks its varied files (made once per content, in the
    variants' cache, atomically: a reader sees a whole folder or none)."""
    masked = dict(tree(unit.lab_dir))
    for rel in varied_files(unit):
        masked.pop(rel, None)
    digest = hashlib.sha256(unit.id.encode())
    for rel, path in masked.items():
        digest.update(b"\0" + rel.encode() + b"\0" + path.read_bytes())
    place = cache_root(unit) / unit.id / SHARED / digest.hexdigest()[:24]
    if not place.is_dir():
        place.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".lab.", dir=place.parent))
        try:
            for rel, path in masked.items():
                (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, staging / rel)
            staging.rename(place)
        except OSError:  # another process made the same folder first: keep its folder
            if not place.is_dir():
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return SharedUnit(unit.id, unit.doc, unit.course_root, unit.config_dir, place)


def notebook_unit(unit: Unit, student: str, secret_file: str | Path | None) -> Unit:
    """The unit a student's notebook is graded against: with a secret file, their variant
    where the unit has variants (the secret read on the grader's side only); else ``unit``."""
    if not secret_file or not varies(unit):
        return unit
    return variant_for(unit, student, load_secret(secret_file))


def autograde_config(secret: str | Path) -> str:
    """The course's managed nbgrader config lines that grade each notebook against its
    student's variant, with the secret file at ``secret`` (read first: a missing or short one
    is a ``SecretError`` before anything is written)."""
    path = Path(secret).resolve()
    load_secret(path)
    return f"""
# Units with per-student variants: each notebook is graded against its student's variant,
# found with this secret by the grader (docs/ta.md, "Variants"); it never enters a notebook.
c.SandboxedAutograde.variant_secret = {str(path)!r}
"""


def own_files(variant: Unit) -> dict[str, Path]:
    """The lab files the variant holds differently from the fixed lab (the student's own
    public traces and other drawn lab files, protocols and expected snapshots), by lab-relative
    path; never an editable file."""
    if not isinstance(variant, VariantUnit):
        return {}
    fixed = fixed_unit(variant).lab_dir
    own = {}
    for rel, path in tree(variant.lab_dir).items():
        same = (fixed / rel).is_file() and (fixed / rel).read_bytes() == path.read_bytes()
        if rel not in variant.editable and not same:
            own[rel] = path
    return own


def overlay(variant: Unit, folder: Path) -> list[str]:
    """Copy the variant's ``own_files`` into ``folder`` (a link there is replaced, not
    followed); the paths written."""
    written = []
    for rel, path in own_files(variant).items():
        target = Path(folder) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        target.write_bytes(path.read_bytes())
        written.append(rel)
    return written
