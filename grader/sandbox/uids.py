"""The dedicated unprivileged uid a child runs under when the grader is root.

A fresh uid per child (no passwd entry needed) means concurrent children cannot read each
other's folders or signal each other, and RLIMIT_NPROC (counted per uid) is the child's alone.
``reserved_uid`` holds an exclusive ``flock`` on a per-uid lock file in a root-only folder for
as long as the child may run, so grader processes side by side on one host never share a uid
(a lock dies with its process, so a crashed grader leaks nothing). After the child ends, every
process of that uid is killed (``kill(-1)`` from a forked process that becomes the uid) and
those re-parented to the grader are reaped; without bubblewrap, what the uid left in the host's
shared folders and System V IPC objects is deleted (``remove_files_of``, ``remove_ipc_of``).
A grader that was killed outright leaves its uids' processes and files behind: the next grader
process cleans every uid of the range that no grader holds (``clean_abandoned``).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import secrets
import shutil
import signal
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

UID_RANGE = (200_000, 260_000)  # dedicated child uids (no passwd entry needed)
SHARED_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
LOCK_PARENTS = ("/run/lock", "/run", "/var/lock", "/tmp")  # the first that exists is used
PR_SET_CHILD_SUBREAPER = 36
SYSV_IPC = (("shm", "shmid", "shmctl"), ("msg", "msqid", "msgctl"), ("sem", "semid", "semctl"))
IPC_RMID = 0


def fresh_uid() -> int:
    """A random uid of the range (not reserved: use ``reserved_uid`` for a child)."""
    return UID_RANGE[0] + secrets.randbelow(UID_RANGE[1] - UID_RANGE[0])


def lock_dir() -> Path:
    """The root-only folder of the uid locks (the same for every grader on the host)."""
    parent = next(p for p in LOCK_PARENTS if os.path.isdir(p))
    folder = Path(parent) / "infralab-uids"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = folder.lstat()
    if not folder.is_dir() or folder.is_symlink() or info.st_uid != 0 or info.st_mode & 0o077:
        raise PermissionError(f"{folder} must be a folder owned by root with mode 0700")
    return folder


@contextlib.contextmanager
def reserved_uid() -> Iterator[int]:
    """A fresh uid that no other grader process holds, for the duration of the block."""
    folder = lock_dir()
    while True:
        uid = fresh_uid()
        fd = os.open(folder / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        break
    try:
        if any(True for _ in _processes_of(uid)):  # left by a grader that crashed
            kill_uid(uid)
        yield uid
    finally:
        os.close(fd)


def hand_over(paths: Iterable[Path], uid: int) -> None:
    """Give ``paths`` (not the targets of links) to the child's uid."""
    for path in paths:
        os.lchown(path, uid, uid)


def _processes_of(uid: int) -> Iterator[str]:
    """PIDs (as /proc entry names) of the processes that run under ``uid``."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            owner = entry.stat().st_uid
        except OSError:
            continue
        if owner == uid:
            yield entry.name


def own_tasks() -> int:
    """Tasks (threads included) that already run under this uid: RLIMIT_NPROC counts them."""
    count = 0
    for pid in _processes_of(os.getuid()):
        with contextlib.suppress(OSError):
            count += len(os.listdir(f"/proc/{pid}/task"))
    return count


def become_subreaper() -> None:
    """Orphans of a killed child tree re-parent to the grader (not to a PID 1 that may never
    reap them); ``kill_uid`` then reaps them."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _reap_orphans(uid: int) -> None:
    me = str(os.getpid())
    for pid in _processes_of(uid):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        if f"PPid:\t{me}\n" in status:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(int(pid), 0)


def kill_uid(uid: int) -> None:
    """Kill every process of ``uid``, then reap those that were re-parented to the grader.

    One forked process becomes ``uid`` (groups, gid, uid; it checks the switch took) and sends
    ``kill(-1, SIGKILL)``: every process it may signal, which is exactly that uid's (it spares
    itself), in every PID namespace below the grader's. Twice, so that a process forked while
    the first signal went round is caught by the second. The forked process only makes system
    calls (no import, no exec) and never returns into the grader's code.
    """
    if not UID_RANGE[0] <= uid < UID_RANGE[1]:
        raise ValueError(f"not a dedicated child uid: {uid}")
    try:
        pid = os.fork()
    except OSError:
        pid = None
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            if os.getresuid() == (uid, uid, uid):
                for _ in range(2):
                    with contextlib.suppress(OSError):  # ESRCH: nothing left to signal
                        os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    if pid is not None:
        os.waitpid(pid, 0)
    _reap_orphans(uid)


def remove_files_of(uid: int) -> None:
    """Fallback mode: delete what the child's uid left in the host's world-writable folders
    (``SHARED_WRITABLE`` and, at any depth, every folder below them that others may write),
    so nothing it stashed there outlives the case (bubblewrap gives it a private /tmp)."""
    for top in SHARED_WRITABLE:
        _remove_below(top, uid)


def _remove_below(folder: str, uid: int) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        with contextlib.suppress(OSError):
            if info.st_uid == uid and stat.S_ISDIR(info.st_mode):
                shutil.rmtree(entry.path, ignore_errors=True)
            elif info.st_uid == uid:
                os.unlink(entry.path)
            elif stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_IWOTH:
                _remove_below(entry.path, uid)


def remove_ipc_of(uid: int) -> None:
    """Remove every System V shared memory segment, message queue and semaphore set that
    ``uid`` owns or created (the child's filter refuses to make them: this is the second
    line). Needs root; a host without ``/proc/sysvipc`` has nothing to remove."""
    libc = ctypes.CDLL(None, use_errno=True)
    for kind, id_column, control in SYSV_IPC:
        for ident in _ipc_ids(kind, id_column, uid):
            if kind == "sem":
                getattr(libc, control)(ident, 0, IPC_RMID, None)
            else:
                getattr(libc, control)(ident, IPC_RMID, None)


def _ipc_ids(kind: str, id_column: str, uid: int) -> list[int]:
    try:
        with open(f"/proc/sysvipc/{kind}", encoding="ascii") as handle:
            header, *rows = [line.split() for line in handle]
    except (OSError, ValueError):
        return []
    at = {name: n for n, name in enumerate(header)}
    return [
        int(row[at[id_column]]) for row in rows if str(uid) in (row[at["uid"]], row[at["cuid"]])
    ]


def clean_abandoned() -> list[int]:
    """Kill and remove what uids of the range left behind when their grader was killed
    outright (no grader holds their lock): processes, files in the shared folders and IPC
    objects. The uids it cleaned. Called once per grader process; needs root."""
    found = _owners_in_range()
    cleaned = []
    folder = lock_dir()
    for uid in sorted(found):
        fd = os.open(folder / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a live grader holds it
        else:
            kill_uid(uid)
            remove_files_of(uid)
            remove_ipc_of(uid)
            cleaned.append(uid)
        finally:
            os.close(fd)
    return cleaned


def _owners_in_range() -> set[int]:
    """uids of the range that own a process, an entry of a shared folder or an IPC object."""
    owners = set()
    for entry in os.scandir("/proc"):
        with contextlib.suppress(OSError):
            if entry.name.isdigit():
                owners.add(entry.stat().st_uid)
    for top in SHARED_WRITABLE:
        with contextlib.suppress(OSError):
            for entry in os.scandir(top):
                with contextlib.suppress(OSError):
                    owners.add(entry.stat(follow_symlinks=False).st_uid)
    for kind, _, _ in SYSV_IPC:
        with contextlib.suppress(OSError, ValueError):
            with open(f"/proc/sysvipc/{kind}", encoding="ascii") as handle:
                header, *rows = [line.split() for line in handle]
            column = header.index("uid")
            owners.update(int(row[column]) for row in rows)
    return {uid for uid in owners if UID_RANGE[0] <= uid < UID_RANGE[1]}
