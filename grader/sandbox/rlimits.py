"""The child's resource limits and uid, applied between fork and the child's first instruction.

util-linux's ``prlimit`` and ``setpriv`` do it in the exec chain (safe with threads, and
``--no-new-privs`` on top); without them, a ``preexec_fn`` does the same in the fork.
"""

from __future__ import annotations

import functools
import math
import os
import resource
import shutil
from collections.abc import Callable

from .results import Limits


def rlimits(limits: Limits, nproc_base: int) -> list[tuple[str, int, int, int]]:
    """(prlimit option, resource, soft, hard) for every limit the child gets.

    ``nproc_base``: tasks already running under the child's uid (RLIMIT_NPROC counts them).
    """
    cpu = max(1, math.ceil(limits.cpu_s))
    return [
        ("--cpu", resource.RLIMIT_CPU, cpu, cpu + 1),  # SIGXCPU at soft, SIGKILL at hard
        ("--as", resource.RLIMIT_AS, limits.memory_mb << 20, limits.memory_mb << 20),
        ("--fsize", resource.RLIMIT_FSIZE, limits.file_mb << 20, limits.file_mb << 20),
        ("--nofile", resource.RLIMIT_NOFILE, limits.open_files, limits.open_files),
        ("--nproc", resource.RLIMIT_NPROC, *(limits.processes + nproc_base,) * 2),
        ("--core", resource.RLIMIT_CORE, 0, 0),
        ("--msgqueue", resource.RLIMIT_MSGQUEUE, 0, 0),  # no POSIX message queue (confine)
    ]


def launcher(
    limits: Limits, uid: int | None, nproc_base: int
) -> tuple[list[str], Callable[[], None] | None]:
    """(command prefix, preexec_fn) that applies the rlimits and the uid before the child runs."""
    prlimit, setpriv = shutil.which("prlimit"), shutil.which("setpriv")
    if prlimit and (uid is None or setpriv):
        prefix = [
            prlimit,
            *(f"{opt}={soft}:{hard}" for opt, _, soft, hard in rlimits(limits, nproc_base)),
        ]
        if uid is not None:
            prefix += [
                setpriv,
                f"--reuid={uid}",
                f"--regid={uid}",
                "--clear-groups",
                "--no-new-privs",
            ]
        return [*prefix, "--"], None
    return [], functools.partial(_child_setup, limits, uid, nproc_base)


def _child_setup(limits: Limits, uid: int | None, nproc_base: int) -> None:
    """Fallback ``preexec_fn`` (no util-linux): rlimits, then the unprivileged uid."""
    for _, which, soft, hard in rlimits(limits, nproc_base):
        resource.setrlimit(which, (soft, hard))
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
