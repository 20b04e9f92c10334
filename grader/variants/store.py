"""A variant as a unit: its lab folder, hidden traces and golden files, made once and cached.

    variant_unit(unit, key) -> VariantUnit   # built on first use, then read from the cache

The cache holds one folder per variant hash (``cache_root()/<unit>/<hash>/``): ``lab/`` (the
unit's own lab files with the variant's public traces, protocols and expected snapshots),
``traces/hidden`` (the fixed hidden traces with the varied ones replaced), ``traces/golden``
(made by ``golden.write_golden`` from the reference, with the fixed set's label key, so hidden
cases keep their labels) and ``variant.json``. The hash covers the key and every input the folder is
made from (unit.yaml's content, lab files and engine, specs, hidden traces, builders,
solutions, and with ``variants.strict`` the mutants), so a changed input makes a new folder
instead of serving a stale one. With ``variants.strict`` a draw on which some mutant loses no
point on any hidden case (``strict.survivors``) is refused and the next draw taken, each
refusal recorded with its reason in ``variant.json``. A folder is built beside its
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
from ..jsonio import write_text_atomic
from ..labfolder import lab_files, tree
from ..units import Unit, UnitError
from . import drawn, fixedset

CACHE_ENV = "INFRALAB_VARIANT_CACHE"
MARKER = "variant.json"
MAX_DRAWS = 5  # with variants.strict: draws refused in a row before the variant is an error


def cache_root(unit: Unit) -> Path:
    """``$INFRALAB_VARIANT_CACHE``, else ``build/variants`` in the course root (git-ignored)."""
    given = os.environ.get(CACHE_ENV)
    return Path(given) if given else unit.course_root / "build" / "variants"


@dataclass(frozen=True)
class VariantUnit(Unit):
    """A unit whose lab folder and traces folder are one variant's (everything else shared)."""

    variant_dir: Path | None = None
    variant_hash: str = ""
    per_student = True

    @cached_property
    def lab_dir(self) -> Path:
        return self.variant_dir / "lab"

    @cached_property
    def traces_dir(self) -> Path:
        return self.variant_dir / "traces"

    def remember_reference(self) -> bool:
        """Remember the reference's verdicts judged when the variant was made (a batch's
        worker, before it grades: ``verdicts.recall``)."""
        from . import verdicts

        return verdicts.recall(self)


def varies(unit: Unit) -> bool:
    """Whether unit.yaml declares anything that varies per student."""
    return bool(drawn.public_names(unit) or drawn.hidden_names(unit) or drawn.protocol_names(unit))


def variant_hash(unit: Unit, key: str) -> str:
    """The variant's cache name: sha256 of its key and of every input its folder is made from."""
    doc = json.dumps(unit.doc, sort_keys=True, default=str)
    digest = hashlib.sha256(f"{unit.id}\0{key}\0{doc}\0".encode())
    for rel, path in _inputs(unit):
        digest.update(f"{rel}\0{len(data := path.read_bytes())}\0".encode() + data)
    return digest.hexdigest()[:24]


def _inputs(unit: Unit) -> list[tuple[str, Path]]:
    files = [(f"lab/{rel}", path) for rel, path in lab_files(unit).items()]
    for sub in ("specs", "hidden"):
        files += [(f"{sub}/{r}", p) for r, p in tree(unit.traces_dir / sub).items()]
    files.append(("labels", labels.key_path(unit)))
    files += [(f"golden/{r}", p) for r, p in tree(unit.traces_dir / "golden").items()]
    files += [(f"solutions/{n}", unit.solutions_dir / n) for n in unit.editable]
    if unit.doc.get("variants", {}).get("strict"):  # which draw is kept depends on them
        files += [(f"mutants/{r}", p) for r, p in tree(unit.mutants_dir).items()]
    for ref in unit.doc.get("variants", {}).get("public", {}).values():
        files.append((f"builder/{ref}", unit.unit_dir / ref.split(":")[0]))
        files += [
            (f"builder/{rel}", unit.unit_dir / rel) for rel in drawn.builder_inputs(unit, ref)
        ]
    return [(rel, path) for rel, path in files if path.is_file()]


def variant_unit(unit: Unit, key: str) -> VariantUnit:
    """The variant ``key`` of ``unit``, from the cache, or built and cached first."""
    if isinstance(unit, VariantUnit):
        raise UnitError("a variant has no variants of its own")
    if not varies(unit):
        raise UnitError(f"unit {unit.id} declares no variants (unit.yaml 'variants')")
    name = variant_hash(unit, key)
    place = cache_root(unit) / unit.id / name
    if not (place / MARKER).is_file():
        _build(unit, key, name, place)
    return as_variant(unit, place, name)


def as_variant(unit: Unit, folder: Path, name: str) -> VariantUnit:
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
    variant = as_variant(unit, staging, name)
    shutil.copyfile(labels.key_path(unit), labels.key_path(variant))
    refused, checked = [], None
    for draw in range(MAX_DRAWS):
        public, same = _write_draw(unit, key, draw, variant)
        if not unit.doc["variants"].get("strict"):
            break
        from . import strict

        mutants = strict.list_mutants(variant)
        lost = strict.survivors(variant, mutants)
        if not lost:
            checked = len(mutants)
            break
        reason = f"mutant(s) {', '.join(lost)} lose no point on any hidden case"
        refused.append({"draw": draw, "reason": reason})
    else:
        raise UnitError(
            f"unit {unit.id}: {MAX_DRAWS} draws in a row of one variant were refused (last: "
            f"{refused[-1]['reason']}); widen the specs' vary ranges or add hidden cases"
        )
    from . import verdicts

    # cases on traces not redrawn: the fixed set's verdicts, judged once for every variant
    kept = verdicts.fixed_entries(unit, fixedset.unvaried_cases(unit), place_of_fixed(unit))
    verdicts.judge_reference(variant, {c: entry for c, entry in kept.items() if c in same})
    marker = {"unit": unit.id, "hash": name, "public": sorted(public)}
    marker |= {"hidden": list(drawn.hidden_names(unit)), "draw": draw, "refused": refused}
    marker["protocols"] = list(drawn.protocol_names(unit))
    marker["strictChecked"] = checked  # mutants each killed on the kept draw; None: not strict
    (staging / MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")


def _write_draw(unit: Unit, key: str, draw: int, variant: VariantUnit) -> tuple[dict, list]:
    """Draw ``draw`` of the variant's traces, its snapshots and golden files, written into its
    folder (atomically: a redraw gives each file a new inode, so no reader's memo of the
    refused draw survives); the public traces drawn and the ids of the cases whose trace is
    the fixed set's (their golden files are the fixed set's, ``fixedset``)."""
    public = drawn.public_traces(unit, key, draw)
    for name, text in public.items():
        write_text_atomic(variant.lab_dir / drawn.public_file(name), text)
    for trace, text in drawn.hidden_traces(unit, key, draw).items():
        write_text_atomic(variant.traces_dir / "hidden" / f"{trace}.json", text)
    for name, text in drawn.protocols(unit, key, draw).items():
        write_text_atomic(variant.lab_dir / "protocols" / f"{name}.json", text)
    for spec in starter.snapshot_specs(variant):
        if spec["trace"] in public:
            path = variant.lab_dir / "tests" / "expected" / f"{spec['id']}.json"
            write_text_atomic(path, starter.snapshot_text(variant, spec))
    same = fixedset.same_cases(unit, variant)
    golden.write_golden(variant, fixedset.golden_texts(unit, variant, same))
    return public, same


def place_of_fixed(unit: Unit) -> Path:
    """Where the fixed set's reference verdicts are kept for the variants (one file per state
    of every input, as a variant's folder)."""
    return cache_root(unit) / unit.id / f"fixed-{variant_hash(unit, '')}.verdicts"


def _copy(files: dict[str, Path], dest: Path) -> None:
    for rel, source in files.items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
