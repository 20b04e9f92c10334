"""Read a submission (a folder or a .zip) and keep only the unit's editable files.

Each editable file is found by its name at the shallowest level it occurs (students often zip
a folder, so ``infra-lab/policies.py`` counts as ``policies.py``). Everything else is ignored
and listed. A zip whose entries escape its folder, a link, an oversized file, an encrypted entry, an
unsupported compression method, an unreadable archive, too many entries or folders nested too
deep is refused with one ``SubmissionError`` naming the problem (never another exception: a
zip or a folder is untrusted data).
"""

from __future__ import annotations

import os
import stat
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..sandbox.output import printable

MAX_FILE_BYTES = 1024 * 1024  # one editable file
MAX_TOTAL_BYTES = 64 * 1024 * 1024  # uncompressed size of the whole zip
MAX_ENTRIES = 10_000
MAX_DEPTH = 32  # folders below the submission's own
MAX_MESSAGE = 1000  # characters of a SubmissionError
LISTED = 3  # names a message lists
IGNORED_DIRS = {"__pycache__", ".git", ".ipynb_checkpoints", "__MACOSX"}
SUPPORTED_COMPRESSION = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}


class SubmissionError(Exception):
    """A submission that cannot be graded; the message says why, in one line.

    The names it quotes are the student's (a zip's entry names), and the message reaches a
    TA's terminal (``infralab: error:``) and ``scores.csv``: every control character in it,
    newline and tab included, is shown as an escape (``sandbox.output.printable``), so no
    name can redraw, reorder or add a line to what the grader prints. It holds at most
    ``MAX_MESSAGE`` characters (its start and end), whatever the names it quotes.
    """

    def __init__(self, message: str):
        one_line = printable(message).replace("\n", "\\n").replace("\t", "\\t")
        if len(one_line) > MAX_MESSAGE:  # names are the student's: as long as a zip allows
            one_line = f"{one_line[: MAX_MESSAGE - 200]} [...] {one_line[-190:]}"
        super().__init__(one_line)


@dataclass
class Submission:
    files: dict[str, bytes]  # editable name -> content
    ignored: list[str] = field(default_factory=list)  # other files found, relative paths
    missing: list[str] = field(default_factory=list)  # editable files not in the submission
    source: str = ""


def submission_name(path: Path) -> str:
    """The name a submission goes by in reports and CSV files (folder name, zip stem), made of
    letters, digits and ``._-@+`` only."""
    path = Path(path)
    name = path.stem if path.suffix.lower() == ".zip" else path.name
    return "".join(ch if ch.isalnum() or ch in "._-@+" else "_" for ch in name) or "_"


def load_submission(path: Path, editable: tuple[str, ...]) -> Submission:
    path = Path(path)
    if path.is_dir():
        entries = _folder_entries(path)
    elif path.is_file():
        entries = _zip_entries(path)
    else:
        raise SubmissionError(f"submission {path}: no such file or folder")
    return _select(entries, editable, path)


def _select(entries: dict[PurePosixPath, callable], editable, source: Path) -> Submission:
    chosen: dict[str, PurePosixPath] = {}
    for name in editable:
        candidates = [p for p in entries if p.name == name and not IGNORED_DIRS & set(p.parts)]
        if not candidates:
            continue
        depth = min(len(p.parts) for p in candidates)
        shallowest = sorted(p for p in candidates if len(p.parts) == depth)
        if len(shallowest) > 1:
            listed = ", ".join(str(p) for p in shallowest[:LISTED])
            listed += f" and {len(shallowest) - LISTED} more" if len(shallowest) > LISTED else ""
            raise SubmissionError(f"submission {source}: more than one {name} ({listed})")
        chosen[name] = shallowest[0]
    if not chosen:
        raise SubmissionError(
            f"submission {source}: none of the editable files ({', '.join(editable)}) is in it"
        )
    files = {name: entries[rel]() for name, rel in chosen.items()}
    used = set(chosen.values())
    ignored = sorted(str(p) for p in entries if p not in used and not IGNORED_DIRS & set(p.parts))
    missing = [name for name in editable if name not in chosen]
    return Submission(files, ignored, missing, str(source))


def folder_entries(root: Path, skip: set[str] = frozenset()) -> Iterator[tuple[str, Path]]:
    """Every entry of a submission folder that is not a folder, as (relative POSIX path,
    path), sorted, top-down, without following links, leaving out folders named in ``skip``.

    A folder is untrusted data as a zip is: more than ``MAX_ENTRIES`` entries, or folders
    nested more than ``MAX_DEPTH`` deep (the standard library's walk recurses once per level,
    so a deep enough folder crashed it), is a ``SubmissionError``, raised before the walk goes
    further. Every walk of a submission folder goes through this one.
    """
    count = 0
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in skip)
        if dirs and len(Path(folder).relative_to(root).parts) >= MAX_DEPTH:
            raise SubmissionError(f"submission {root}: folders nested more than {MAX_DEPTH} deep")
        for name in sorted(names):
            count += 1
            if count > MAX_ENTRIES:  # a zip's bound: the walk stops here
                raise SubmissionError(f"submission {root}: more than {MAX_ENTRIES} files")
            path = Path(folder) / name
            yield path.relative_to(root).as_posix(), path


def _folder_entries(root: Path) -> dict:
    entries = {}
    for rel, path in folder_entries(root, IGNORED_DIRS):
        if path.is_symlink():
            raise SubmissionError(f"submission {root}: '{rel}' is a symbolic link")
        if path.is_file():
            entries[PurePosixPath(rel)] = _reader_file(path, rel, root)
    return entries


def _reader_file(path: Path, rel, root):
    def read() -> bytes:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise SubmissionError(f"submission {root}: '{rel}' is larger than 1 MiB")
        return path.read_bytes()

    return read


def _read_capped(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The entry's bytes, reading at most one byte past the cap whatever its header claims."""
    with archive.open(info) as handle:
        return handle.read(MAX_FILE_BYTES + 1)


def _zip_entries(path: Path) -> dict:
    try:
        archive = zipfile.ZipFile(path)
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, RuntimeError, NotImplementedError) as exc:
        raise SubmissionError(f"submission {path}: not a readable zip file ({exc})") from None
    if len(infos) > MAX_ENTRIES:
        raise SubmissionError(f"submission {path}: more than {MAX_ENTRIES} entries")
    if sum(i.file_size for i in infos) > MAX_TOTAL_BYTES:
        raise SubmissionError(f"submission {path}: more than 64 MiB once unpacked")
    entries = {}
    for info in infos:
        name = info.filename
        posix = name.replace("\\", "/")
        rel = PurePosixPath(posix)
        if posix.startswith("/") or ".." in rel.parts or (rel.parts and ":" in rel.parts[0]):
            raise SubmissionError(f"submission {path}: entry '{name}' escapes the zip's folder")
        if stat.S_ISLNK(info.external_attr >> 16):
            raise SubmissionError(f"submission {path}: entry '{name}' is a symbolic link")
        if info.is_dir():
            continue
        entries[rel] = _reader_zip(archive, info, path)
    return entries


def _reader_zip(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path):
    def read() -> bytes:
        if info.file_size > MAX_FILE_BYTES:
            raise SubmissionError(f"submission {path}: '{info.filename}' is larger than 1 MiB")
        if info.flag_bits & 0x1:
            raise SubmissionError(f"submission {path}: '{info.filename}' is encrypted")
        if info.compress_type not in SUPPORTED_COMPRESSION:
            raise SubmissionError(
                f"submission {path}: '{info.filename}' uses an unsupported compression method"
            )
        try:
            data = _read_capped(archive, info)
        except (
            zipfile.BadZipFile,
            OSError,
            ValueError,
            EOFError,
            RuntimeError,
            NotImplementedError,
            zlib.error,
            LookupError,
        ) as exc:
            raise SubmissionError(
                f"submission {path}: cannot read '{info.filename}' ({type(exc).__name__})"
            ) from None
        if len(data) > MAX_FILE_BYTES:
            raise SubmissionError(f"submission {path}: '{info.filename}' is larger than 1 MiB")
        return data

    return read


def _read_capped(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The entry's bytes, reading at most one byte past the cap whatever its header claims."""
    with archive.open(info) as handle:
        return handle.read(MAX_FILE_BYTES + 1)
