"""The bubblewrap command line: what of the host exists inside the child's file system.

Only ``/usr`` (and ``/bin``, ``/lib*`` as the host has them), the interpreter's prefix and the
case folder (read-only, at ``CASE_DIR``); private ``/proc``, ``/dev``; two size-capped tmpfs,
``/tmp`` and the output folder ``OUT_DIR`` (nothing the child writes reaches the host's disk:
the runner sends results over its stdout); no network, own PID/IPC/UTS namespaces
(``--unshare-all``) and a cleared environment.

Those two are the only places the child can write: the root and ``/dev`` (tmpfs mounts that
bubblewrap makes, of the kernel's default size, half of RAM, and owned by the child's uid)
are remounted read-only once everything is in place, ``/dev/shm`` with them. The child cannot
make them writable again, nor mount anything else (``confine`` refuses new namespaces and
mounts; a read-only mount a user namespace inherits is locked).
"""

from __future__ import annotations

import os
from pathlib import Path

from .results import Limits

CASE_DIR = "/lab"  # where the case folder appears inside bubblewrap
OUT_DIR = "/out"


def child_env() -> dict[str, str]:
    """The whole environment of the child, in every mode (the fallback overrides the homes)."""
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp", "TMPDIR": "/tmp"}


def _host_root_binds() -> list[str]:
    """/usr read-only, and /bin, /lib, /lib64, /sbin as the host has them (links or binds)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(name):
            args += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            args += ["--ro-bind", name, name]
    return args


def bwrap_command(
    bwrap: str,
    python_prefix: str,
    case: Path,
    inner: list[str],
    limits: Limits,
) -> list[str]:
    """``bwrap ... -- inner``: run ``inner`` in ``CASE_DIR`` with ``case`` bound read-only."""
    command = [bwrap, "--unshare-all", "--die-with-parent", "--new-session"]
    command += _host_root_binds()
    if not (python_prefix == "/usr" or python_prefix.startswith("/usr/")):
        command += ["--ro-bind", python_prefix, python_prefix]
    command += ["--ro-bind", str(case), CASE_DIR]
    command += ["--proc", "/proc", "--dev", "/dev"]
    command += ["--size", str(limits.tmp_mb << 20), "--tmpfs", "/tmp"]
    command += ["--size", str(limits.out_mb << 20), "--tmpfs", OUT_DIR]
    command += ["--remount-ro", "/dev", "--remount-ro", "/"]  # last: all mount points made
    command += ["--chdir", CASE_DIR, "--clearenv"]
    for key, value in child_env().items():
        command += ["--setenv", key, value]
    return [*command, "--", *inner]
