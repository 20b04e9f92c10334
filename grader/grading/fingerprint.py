"""Fingerprints of what a batch report was graded from, so a changed input means a regrade.

    inputs_fingerprint(unit, cases, limits) -> str   (once per batch)
    submission_hash(path) -> str                     (once per submission)

The inputs are the unit's config (``unit.yaml`` as loaded), every golden file and hidden trace
of the unit, the lab folder the child gets, the grader's own source and version, the selected
cases and the limits. A batch report records both fingerprints; a rerun regrades any
submission whose report was made from other inputs (a new case, regenerated golden files, a
fixed grader, a resubmitted zip).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path

from .. import labfolder
from ..sandbox import Limits
from ..units import Unit
from .submission import SubmissionError, folder_entries

GRADER_DIR = Path(__file__).resolve().parent
MAX_HASHED_BYTES = 256 << 20  # a submission folder beyond this is hashed by names and sizes


def _hash_tree(digest, root: Path, suffixes: tuple[str, ...] | None = None) -> None:
    """Feed every regular file below ``root`` (sorted, links skipped) into ``digest``."""
    if not root.exists():
        digest.update(b"<absent>")
        return
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            path = Path(folder) / name
            if path.is_symlink() or not path.is_file():
                continue
            if suffixes and path.suffix not in suffixes:
                continue
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())


def grader_version() -> str:
    """The grader's package version and a hash of its source files."""
    from importlib import metadata

    try:
        version = metadata.version("infralab")
    except metadata.PackageNotFoundError:
        version = "unknown"
    digest = hashlib.sha256()
    _hash_tree(digest, GRADER_DIR, (".py", ".json", ".sh"))
    return f"{version}+{digest.hexdigest()[:16]}"


def inputs_fingerprint(unit: Unit, cases: list[str] | None, limits: Limits | None) -> str:
    """One hash of everything a report of this batch depends on besides the submission."""
    digest = hashlib.sha256()
    digest.update(json.dumps(unit.doc, sort_keys=True, default=str).encode())
    _hash_tree(digest, unit.traces_dir)  # golden files, hidden traces, specs
    _hash_tree(digest, labfolder.built(unit))  # the lab folder as graded, engine included
    digest.update(grader_version().encode())
    digest.update(json.dumps(sorted(cases or [])).encode())
    digest.update(json.dumps(asdict(limits) if limits else None, sort_keys=True).encode())
    return digest.hexdigest()


def submission_hash(path: Path) -> str:
    """A hash of a submission zip's bytes, or of a folder's files (names and contents)."""
    path = Path(path)
    digest = hashlib.sha256()
    if path.is_file():
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
    total = 0
    try:
        for rel, file in folder_entries(path):
            digest.update(rel.encode() + b"\0")
            if file.is_symlink() or not file.is_file():
                continue
            size = file.stat().st_size
            total += size
            digest.update(str(size).encode())
            if total <= MAX_HASHED_BYTES:
                digest.update(hashlib.sha256(file.read_bytes()).digest())
    except SubmissionError as exc:  # its grading fails with the same error, a row of its own
        digest.update(b"\0error\0" + str(exc).encode())
    return digest.hexdigest()
