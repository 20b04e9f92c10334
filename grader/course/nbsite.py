"""The grading kernel's Python packages: ipykernel and what it needs, in a folder of their own.

The kernel cannot be given the staff environment's ``site-packages`` as it is: the folder
usually lies in the checkout (``.venv``), and its path would be readable from the kernel in
every compiled ``.pyc`` (which records where it was compiled), in the editable install's
finder and ``direct_url.json``, in ``/proc/self/mountinfo`` (the source of each bind) and on
``sys.path``. So ``site_copy()`` copies the files of ipykernel's distribution closure
(``closure()``: its requirements, recursively, as installed) without ``__pycache__``, scripts
or ``direct_url.json``, into a folder outside the checkout, and refuses the copy if any file
of it names the checkout's path. The kernel binds that folder, read-only, at ``MOUNT``.

The copy is made once per set of installed versions (``copy_key``) in the sandbox's scratch
folder, as a folder of the grading user's that nobody else can write; a later kernel uses it
after checking exactly that.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

from ..sandbox import SandboxError, scratch_dir
from ..units import CODE_ROOT

ROOT_DISTRIBUTION = "ipykernel"
MOUNT = "/opt/infralab/site-packages"  # where the copy appears in the kernel's sandbox
PREFIX = "infralab-kernel-site-"
SKIPPED = ("direct_url.json", "RECORD", "INSTALLER", "REQUESTED")  # install-time records
STALE_S = 24 * 3600  # a copy unused this long is another checkout's or an older one's


def closure(root: str = ROOT_DISTRIBUTION) -> list[metadata.Distribution]:
    """``root``'s installed distribution and every one it requires (no extras), by name."""
    # here, not at the top: packaging comes with the nbgrader extra (ipykernel requires it),
    # and the release commands import this module without that extra
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: dict[str, metadata.Distribution] = {}
    pending = [root]
    while pending:
        name = canonicalize_name(pending.pop())
        if name in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise SandboxError(f"the grading kernel needs {name}, which is not installed") from None
        found[name] = dist
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(requirement.name)
    return [found[name] for name in sorted(found)]


def copy_key(dists: list[metadata.Distribution]) -> str:
    """What the copy depends on: the Python, and each distribution's name, version, place."""
    parts = [sys.version] + [
        f"{dist.metadata['Name']}=={dist.version}@{dist.locate_file('')}" for dist in dists
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _shipped(dist: metadata.Distribution):
    """(relative path, source) of each file of ``dist`` the kernel may need."""
    for rel in dist.files or []:
        parts = rel.parts
        if parts[0] == ".." or "__pycache__" in parts or rel.suffix == ".pyc":
            continue
        if parts[0].endswith(".dist-info") and rel.name in SKIPPED:
            continue
        yield Path(*parts), Path(dist.locate_file(rel))


def checkout_names() -> list[bytes]:
    """The checkout's path as a kernel could find it written: as given and resolved."""
    return sorted({os.fsencode(p) for p in (str(CODE_ROOT), os.path.realpath(CODE_ROOT))})


def naming_checkout(folder: Path) -> list[Path]:
    """The files below ``folder`` whose bytes hold the checkout's path."""
    needles = checkout_names()
    found = []
    for root, _, files in os.walk(folder):
        for name in files:
            path = Path(root, name)
            data = path.read_bytes()
            if any(needle in data for needle in needles):
                found.append(path)
    return found


def build(dists: list[metadata.Distribution], dest: Path) -> None:
    """Copy ``dists``' files into ``dest`` (readable by any uid); refuse a copy that names the
    checkout."""
    for dist in dists:
        for rel, source in _shipped(dist):
            if not source.is_file():
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            os.chmod(target, 0o644)
    for root, _, _ in os.walk(dest):
        os.chmod(root, 0o755)
    named = naming_checkout(dest)
    if named:
        rel = named[0].relative_to(dest)
        raise SandboxError(f"the kernel's packages would name the checkout's path ({rel})")


def _ours(path: Path) -> bool:
    """A real folder of ours that no other user can write."""
    st = path.lstat()
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def site_copy() -> Path:
    """The folder the kernel binds at ``MOUNT``, made now if this set of versions has none.
    Each use marks it used (its modification time); copies of ours unused for ``STALE_S`` (made
    for another checkout's or an older set of versions) are removed, since the scratch folder
    is usually memory."""
    dists = closure()
    base = Path(scratch_dir() or tempfile.gettempdir())
    final = base / f"{PREFIX}{copy_key(dists)}"
    sweep_unused(base, final)
    if final.exists() or final.is_symlink():
        if not _ours(final):
            raise SandboxError(f"{final} is not a folder of ours that only we can write")
        os.utime(final)
        return final
    staging = Path(tempfile.mkdtemp(prefix=f".{PREFIX}", dir=base))
    try:
        build(dists, staging)
        os.chmod(staging, 0o755)
        try:
            os.rename(staging, final)
        except OSError:  # another kernel made it first
            if not _ours(final):
                raise SandboxError(
                    f"{final} is not a folder of ours that only we can write"
                ) from None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return final


def sweep_unused(base: Path, keep: Path) -> None:
    """Remove the copies in ``base``, ``keep`` aside, that are ours and unused for ``STALE_S``."""
    now = time.time()
    with contextlib.suppress(OSError):
        for entry in os.scandir(base):
            path = Path(entry.path)
            if not entry.name.startswith(PREFIX) or path == keep:
                continue
            with contextlib.suppress(OSError):
                if _ours(path) and now - path.lstat().st_mtime > STALE_S:
                    shutil.rmtree(path)
