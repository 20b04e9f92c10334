"""What can run on this host: the isolation mode and the child's interpreter, chosen once.

``INFRALAB_SANDBOX`` (``MODE_ENV``) asks for "auto" (default: bubblewrap where a one-second
probe shows it works, else the rlimits fallback), "bwrap" (required: ``SandboxError`` where it
cannot run) or "rlimits". The child's interpreter is the first Python >= 3.11 (the grader's own
base interpreter, then ``/usr/bin/python3``, ...) that the child's uid can execute.

Planning also refuses a host whose kernel will not take the child's seccomp filter
(``confine``), and removes what graders that were killed outright left behind: temp folders
nobody holds (``sweep_folders``) and, as root, the processes, files and IPC objects of child
uids nobody holds (``uids.clean_abandoned``).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..tempfolders import LAB_PREFIX
from . import confine, seccomp
from .bwrap import bwrap_command
from .results import Limits, SandboxError
from .rlimits import launcher
from .uids import become_subreaper, clean_abandoned, hand_over, kill_uid, own_tasks, reserved_uid

MODE_ENV = "INFRALAB_SANDBOX"  # "auto" (default), "bwrap" (required) or "rlimits" (fallback)
MEMORY_SCRATCH = "/dev/shm"
SCRATCH_FREE = 256 << 20  # bytes the memory-backed folder must have free to be used
CASE_PREFIX, TEMPLATE_PREFIX = "infralab-case-", "infralab-template-"
STALE_S = 60  # an unheld temp folder at least this old is a killed grader's


def sweep_folders() -> None:
    """Remove the case folders, templates and assembled lab folders that graders killed outright
    left in the scratch folders (this user's, not held, older than ``STALE_S``): a case folder
    held the submission's files, the others a copy of the lab."""
    now = time.time()
    for top in {MEMORY_SCRATCH, tempfile.gettempdir()}:
        with contextlib.suppress(OSError):
            for entry in os.scandir(top):
                if not entry.name.startswith((CASE_PREFIX, TEMPLATE_PREFIX, LAB_PREFIX)):
                    continue
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    if info.st_uid != os.geteuid() or now - info.st_mtime < STALE_S:
                        continue
                    fd = os.open(entry.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        shutil.rmtree(entry.path, ignore_errors=True)
                    except BlockingIOError:
                        pass  # a live grader's
                    finally:
                        os.close(fd)


def require_confinement() -> None:
    """``SandboxError`` unless this machine has a filter table and its kernel takes the filter
    (tried in a forked process, which exits at once)."""
    try:
        program = seccomp.filter_bytes()
    except KeyError:
        raise SandboxError(
            f"no seccomp table for this machine ({os.uname().machine}) in "
            "grader/sandbox/seccomp.py: the sandbox supports x86_64 and aarch64"
        ) from None
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            confine.apply(program)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SandboxError("this kernel refuses the sandbox's seccomp filter (no_new_privs)")


@functools.cache
def scratch_dir() -> str | None:
    """Where each submission's case folder and case inputs are written: ``/dev/shm`` where it
    is a writable folder in memory with room to spare and ``TMPDIR`` names no other place, so
    the hundred-odd files of a case folder cost no disk journal (about three times less CPU
    than on a disk); None (Python's temp folder) elsewhere. The folders made there are as
    private as in ``/tmp``: ``tempfile`` makes them 0700 (``launch`` opens a case folder's top
    to the child's gid alone)."""
    if os.environ.get("TMPDIR"):
        return None
    try:
        info = os.statvfs(MEMORY_SCRATCH)
    except OSError:
        return None
    room = info.f_bavail * info.f_frsize >= SCRATCH_FREE
    return MEMORY_SCRATCH if room and os.access(MEMORY_SCRATCH, os.W_OK | os.X_OK) else None


@dataclass(frozen=True)
class Interpreter:
    path: str
    prefix: str  # sys.base_prefix of that interpreter


@dataclass(frozen=True)
class Plan:
    mode: str  # "bwrap" or "rlimits"
    drop_uid: bool
    python: Interpreter
    bwrap: str | None

    @property
    def isolation(self) -> str:
        """The mode as reports name it: "bwrap+uid", "bwrap", "rlimits+uid" or "rlimits"."""
        return self.mode + ("+uid" if self.drop_uid else "")

    def bwrap_command(self, case: Path, inner: list[str], limits: Limits) -> list[str]:
        return bwrap_command(self.bwrap, self.python.prefix, case, inner, limits)


def world_usable(path: str) -> bool:
    """Whether any user may reach and execute ``path`` (every parent dir o+x, file o+rx)."""
    path = os.path.realpath(path)
    parts = Path(path).parents
    try:
        if any(not os.stat(p).st_mode & stat.S_IXOTH for p in parts):
            return False
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return bool(mode & stat.S_IXOTH and mode & stat.S_IROTH)


def _candidates() -> list[str]:
    found = [os.path.realpath(getattr(sys, "_base_executable", "") or sys.executable)]
    for name in ("/usr/bin/python3", shutil.which("python3") or "", "/usr/local/bin/python3"):
        if name and os.path.exists(name) and os.path.realpath(name) not in found:
            found.append(os.path.realpath(name))
    return found


def _probe_interpreter(path: str) -> Interpreter | None:
    code = "import sys; print(sys.version_info >= (3, 11)); print(sys.base_prefix)"
    try:
        done = subprocess.run(
            [path, "-I", "-S", "-c", code],
            capture_output=True,
            text=True,
            timeout=20,
            env={},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2 or lines[0] != "True":
        return None
    return Interpreter(path, lines[1])


@functools.cache
def plan(requested: str) -> Plan:
    """Choose the isolation mode and the child's interpreter once per process."""
    drop_uid = os.geteuid() == 0
    require_confinement()
    sweep_folders()
    if drop_uid:
        become_subreaper()
        clean_abandoned()
    pythons = [p for p in map(_probe_interpreter, _candidates()) if p]
    if drop_uid:
        pythons = [p for p in pythons if world_usable(p.path)]
    if not pythons:
        raise SandboxError(
            "no Python >= 3.11 that an unprivileged user may run (install python3 under /usr)"
        )
    bwrap = shutil.which("bwrap")
    if requested in ("auto", "bwrap") and bwrap:
        for python in pythons:
            candidate = Plan("bwrap", drop_uid, python, bwrap)
            if _works(candidate):
                return candidate
    if requested == "bwrap":
        raise SandboxError(f"{MODE_ENV}=bwrap but bubblewrap is missing or cannot run here")
    return Plan("rlimits", drop_uid, pythons[0], None)


def _works(candidate: Plan) -> bool:
    """Whether bubblewrap can start the interpreter here with this plan (a 1-second probe)."""
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix=CASE_PREFIX + "probe-"))
        uid = stack.enter_context(reserved_uid()) if candidate.drop_uid else None
        case, out = Path(tmp) / "case", Path(tmp) / "out"
        case.mkdir()
        out.mkdir()
        if uid is not None:
            hand_over([Path(tmp), case, out], uid)
        inner = [candidate.python.path, "-I", "-S", "-c", "pass"]
        command = candidate.bwrap_command(case, inner, Limits())
        prefix, preexec = launcher(Limits(), uid, own_tasks() if uid is None else 0)
        try:
            done = subprocess.run(
                [*prefix, *command],
                capture_output=True,
                check=False,
                timeout=10,
                env={},
                start_new_session=True,
                preexec_fn=preexec,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        finally:
            if uid is not None:
                kill_uid(uid)
        return done.returncode == 0


def current_plan() -> Plan:
    """The plan for the mode ``MODE_ENV`` asks for now (each mode is planned once)."""
    value = os.environ.get(MODE_ENV, "auto").strip().lower() or "auto"
    if value not in ("auto", "bwrap", "rlimits"):
        raise SandboxError(f"{MODE_ENV} must be auto, bwrap or rlimits, got {value!r}")
    return plan(value)


def isolation_mode() -> str:
    """The mode ``run_simulation`` uses on this host ("bwrap+uid", "rlimits", ...)."""
    return current_plan().isolation


def reachable_by_others(path: Path) -> bool:
    """Whether a user that is neither the owner nor in the group can reach ``path`` (a child
    has only "other" rights): every folder from ``/`` down to it is o+x, and ``path`` itself
    is o+x if a folder, o+r if a file."""
    path = Path(os.path.realpath(path))
    try:
        own = stat.S_IXOTH if path.is_dir() else stat.S_IROTH
        folders = all(os.stat(p).st_mode & stat.S_IXOTH for p in path.parents)
        return bool(folders and os.stat(path).st_mode & own)
    except OSError:
        return False


def require_safe_isolation(hidden: list[Path], *, batch: bool = False) -> str:
    """The isolation mode, if it keeps ``hidden`` (golden files, hidden traces, solutions,
    reports) out of the child's reach; else ``SandboxError`` saying what to do.

    bubblewrap modes: the paths do not exist in the child's file system. ``rlimits+uid``: only
    where each path sits below a folder other users cannot enter, and only for one submission
    at a time (``batch``: no disk quota without bubblewrap). ``rlimits`` (not root, no
    bubblewrap): always refused, the child would run as the grader's own user.
    """
    current = current_plan()
    if current.mode == "bwrap":
        return current.isolation
    if not current.drop_uid:
        raise SandboxError(
            "refusing to grade: without bubblewrap and without root the submission would run as "
            "the grader's own user and could read or rewrite golden files and reports; install "
            "bubblewrap (apt-get install bubblewrap) or run the grader as root"
        )
    exposed = [str(path) for path in hidden if reachable_by_others(path)]
    if exposed:
        raise SandboxError(
            f"refusing to grade in mode {current.isolation}: {exposed[0]} is reachable by other "
            "users, so a submission could read it; install bubblewrap, or make it or a folder "
            "above it private (chmod go-rwx)"
        )
    if batch:
        raise SandboxError(
            f"refusing to grade a batch in mode {current.isolation}: without bubblewrap the disk "
            "a submission writes cannot be capped, so one submission could fill the disk under "
            "the others; install bubblewrap (apt-get install bubblewrap), or grade one "
            "submission per machine"
        )
    return current.isolation
