"""Results of pure computations, remembered by the hash of everything they depend on.

Two kinds live here, each in its own subfolder:

- ``units``: unit.yaml documents that passed their schema check. Reading a unit parses YAML and
  checks it against ``schemas/unit.schema.json``; importing PyYAML and jsonschema costs more
  than many commands' own work. The check is a pure function of the file's text, the schema and
  the checking code, so a document that passed is stored as JSON under the hash of all three,
  and the next command reading the same text takes it from there. A changed file has another
  hash and is parsed and checked again.
- ``answer-keys``: the notebooks' answer keys (``grader.course.nbcheck``), under the hash of the
  code and files that compute them (``nbcheck.key_inputs``).

The folder is ``$INFRALAB_CACHE``, else ``$XDG_CACHE_HOME/infralab``, else
``~/.cache/infralab``. It is trusted only while it is this user's own (mode 0700) and so is the
file read from it, so no other user (a submission's child among them) can plant a document.
Nothing here fails a command: a folder that cannot be used, or a file that cannot be read or
written, is no cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path

CACHE_ENV = "INFRALAB_CACHE"
_HERE = Path(__file__).resolve().parent
# what decides whether a text passes: the schema and the code that parses and checks
_SOURCES = (_HERE / "schemas/unit.schema.json", _HERE / "schema.py", _HERE / "units.py")


def cache_dir() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "infralab"


def key(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8"))
    for source in _SOURCES:
        digest.update(b"\0" + source.read_bytes())
    return digest.hexdigest()


def _own_folder(kind: str, create: bool) -> Path | None:
    folder = cache_dir() / kind
    if create:
        with contextlib.suppress(OSError):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        info = os.lstat(folder)
    except OSError:
        return None
    mine = info.st_uid == os.geteuid() and not info.st_mode & 0o077
    return folder if stat.S_ISDIR(info.st_mode) and mine else None


def recall(text: str) -> dict | None:
    """The checked document stored for this unit.yaml text, or None."""
    return recall_doc("units", key(text))


def remember(text: str, doc: dict) -> None:
    """Store ``doc``, the checked document of this text (if JSON holds it exactly)."""
    remember_doc("units", key(text), doc)


def recall_doc(kind: str, digest: str) -> dict | None:
    """The document of ``kind`` stored under ``digest``, or None."""
    folder = _own_folder(kind, create=False)
    if folder is None:
        return None
    try:
        fd = os.open(folder / f"{digest}.json", os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, encoding="utf-8") as handle:
        info = os.fstat(handle.fileno())
        if info.st_uid != os.geteuid() or info.st_mode & 0o022:
            return None
        try:
            doc = json.loads(handle.read())
        except (OSError, ValueError):
            return None
    return doc if isinstance(doc, dict) else None


def remember_doc(kind: str, digest: str, doc: dict) -> None:
    """Store ``doc`` of ``kind`` under ``digest`` (if JSON holds it exactly)."""
    try:
        encoded = json.dumps(doc, ensure_ascii=False, allow_nan=False)
        if json.loads(encoded) != doc:
            return
    except (TypeError, ValueError):
        return
    folder = _own_folder(kind, create=True)
    if folder is None:
        return
    with contextlib.suppress(OSError):
        fd, tmp = tempfile.mkstemp(prefix=".doc.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(encoded)
            os.replace(tmp, folder / f"{digest}.json")
        except OSError:
            Path(tmp).unlink(missing_ok=True)


@contextlib.contextmanager
def held(kind: str, digest: str):
    """One process at a time computes the document of ``kind`` under ``digest``: the others wait
    here, then find it stored. Without a usable folder (or ``fcntl``), nothing is held."""
    folder = _own_folder(kind, create=True)
    fd = None
    if folder is not None:
        with contextlib.suppress(OSError, ImportError):
            import fcntl

            fd = os.open(folder / f"{digest}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # closing drops the lock
