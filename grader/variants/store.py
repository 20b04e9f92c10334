"""A variant as a unit: its lab folder, hidden traces and golden files, made once and cached.

    variant_unit(unit, key) -> VariantUnit   # built on first use, then read from the cache

The cache holds one folder per variant hash (``cache_root()/<unit>/<hash>/``): ``lab/`` (the
unit's own lab files with the variant's public traces and expected snapshots), ``traces/hidden``
(the fixed hidden traces with the varied ones replaced), ``traces/golden`` (made by
``golden.write_golden`` from the reference, with the fixed set's label key, so hidden cases
keep their labels) and ``variant.json``. The hash covers the key and every input the folder is
made from (unit.yaml, lab files and engine, specs, hidden traces, builders, solutions), so a
changed input makes a new folder instead of serving a stale one. A folder is built beside its
place and renamed into it: a reader sees a whole variant or none. Cache folders are private
(0700, from ``mkdtemp``): they hold hidden traces and golden files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..course import golden, labels, starter
from ..labfolder import lab_files, tree
from ..units import Unit, UnitError
from . import drawn

CACHE_ENV = "INFRALAB_VARIANT_CACHE"
MARKER = "variant.json"
SHIPPED = "shipped.json"  # a Gradescope bundle's class: sha256(key) -> variant folder


def cache_root(unit: Unit) -> Path:
    """``$INFRALAB_VARIANT_CACHE``, else ``build/variants`` in the course root (git-ignored)."""
    given = os.environ.get(CACHE_ENV)
    return Path(given) if given else unit.course_root / "build" / "variants"


@dataclass(frozen=True)
class VariantUnit(Unit):
    """A unit whose lab folder and traces folder are one variant's (everything else shared)."""

    variant_dir: Path | None = None
    variant_hash: str = ""

    @cached_property
    def lab_dir(self) -> Path:
        return self.variant_dir / "lab"

    @cached_property
    def traces_dir(self) -> Path:
        return self.variant_dir / "traces"


def varies(unit: Unit) -> bool:
    """Whether unit.yaml declares anything that varies per student."""
    return bool(drawn.public_names(unit) or drawn.hidden_names(unit))


def variant_hash(unit: Unit, key: str) -> str:
    """The variant's cache name: sha256 of its key and of every input its folder is made from."""
    digest = hashlib.sha256(f"{unit.id}\0{key}\0".encode())
    for rel, path in _inputs(unit):
        digest.update(f"{rel}\0{len(data := path.read_bytes())}\0".encode() + data)
    return digest.hexdigest()[:24]


def _inputs(unit: Unit) -> list[tuple[str, Path]]:
    files = [(f"lab/{rel}", path) for rel, path in lab_files(unit).items()]
    for sub in ("specs", "hidden"):
        files += [(f"{sub}/{r}", p) for r, p in tree(unit.traces_dir / sub).items()]
    files += [("unit.yaml", unit.unit_dir / "unit.yaml"), ("labels", labels.key_path(unit))]
    files += [(f"solutions/{n}", unit.solutions_dir / n) for n in unit.editable]
    for ref in unit.doc.get("variants", {}).get("public", {}).values():
        files.append((f"builder/{ref}", unit.unit_dir / ref.split(":")[0]))
    return [(rel, path) for rel, path in files if path.is_file()]


def variant_unit(unit: Unit, key: str) -> VariantUnit:
    """The variant ``key`` of ``unit``, from the cache, or built and cached first."""
    if isinstance(unit, VariantUnit):
        raise UnitError("a variant has no variants of its own")
    if not varies(unit):
        raise UnitError(f"unit {unit.id} declares no variants (unit.yaml 'variants')")
    shipped = _shipped(unit, key)
    if shipped is not None:
        return _as_variant(unit, shipped, shipped.name)
    name = variant_hash(unit, key)
    place = cache_root(unit) / unit.id / name
    if not (place / MARKER).is_file():
        _build(unit, key, name, place)
    return _as_variant(unit, place, name)


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _shipped(unit: Unit, key: str) -> Path | None:
    """In a Gradescope bundle (no solutions to build from): the variant made at home for this
    key (``variants.bundle``); elsewhere None."""
    index = cache_root(unit) / unit.id / SHIPPED
    if not index.is_file():
        return None
    name = json.loads(index.read_text(encoding="utf-8")).get(key_digest(key))
    if not isinstance(name, str) or not (index.parent / name / MARKER).is_file():
        raise UnitError(
            "this autograder holds no variant for the submission's student; staff must add "
            "the student to the roster and upload the autograder again"
        )
    return index.parent / name


def _as_variant(unit: Unit, folder: Path, name: str) -> VariantUnit:
    return VariantUnit(unit.id, unit.doc, unit.course_root, unit.config_dir, folder, name)


def _build(unit: Unit, key: str, name: str, place: Path) -> None:
    if not labels.key_path(unit).is_file():
        raise UnitError(f"unit {unit.id} has no label key; run: infralab golden --unit {unit.id}")
    place.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=place.parent))
    try:
        _fill(unit, key, name, staging)
        try:
            staging.rename(place)
        except OSError:  # another process finished the same variant first: keep its folder
            if not (place / MARKER).is_file():
                raise
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _fill(unit: Unit, key: str, name: str, staging: Path) -> None:
    _copy(tree(unit.lab_dir), staging / "lab")
    _copy(tree(unit.traces_dir / "hidden"), staging / "traces" / "hidden")
    (staging / "traces" / "golden").mkdir(parents=True)
    shutil.copyfile(labels.key_path(unit), labels.key_path(_as_variant(unit, staging, name)))
    public = drawn.public_traces(unit, key)
    for trace, text in public.items():
        (staging / "lab" / "traces" / f"{trace}.json").write_text(text, encoding="utf-8")
    for trace, text in drawn.hidden_traces(unit, key).items():
        (staging / "traces" / "hidden" / f"{trace}.json").write_text(text, encoding="utf-8")
    variant = _as_variant(unit, staging, name)
    for spec in starter.snapshot_specs(variant):
        if spec["trace"] in public:
            path = staging / "lab" / "tests" / "expected" / f"{spec['id']}.json"
            path.write_text(starter.snapshot_text(variant, spec), encoding="utf-8")
    golden.write_golden(variant)
    marker = {"unit": unit.id, "hash": name, "public": sorted(public)}
    marker["hidden"] = list(drawn.hidden_names(unit))
    (staging / MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")


def _copy(files: dict[str, Path], dest: Path) -> None:
    for rel, source in files.items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
