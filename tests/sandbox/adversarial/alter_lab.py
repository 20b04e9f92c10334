"""A case tries to change the lab's own files in its case folder, so that the submissions graded
after it (by the same grader process, whose case folders share the lab's files) would break.

At import it appends ``raise SystemExit(3)`` to the engine, truncates its bytecode, changes
their modes and times, renames, unlinks, hard-links and replaces them, appends again from a
user namespace of its own after remounting the lab folder writable there, and prints every
change that went through (``altered: ...``). The case folder is read-only for the child, so
none does; the policies themselves are correct.

EARNS: all
"""

import contextlib
import ctypes
import glob
import os

from servesim import Batch, SchedulerView, engine

_servesim = os.path.dirname(os.path.abspath(engine.__file__))
_lab = os.path.dirname(_servesim)
_targets = [
    os.path.join(_servesim, "engine.py"),
    *glob.glob(os.path.join(_servesim, "__pycache__", "engine.*.pyc")),
    os.path.join(_lab, "simulate.py"),
]


def _append(path):
    with open(path, "ab") as handle:
        handle.write(b"\nraise SystemExit(3)\n")


def _replace(path):
    with open(path + ".new", "wb") as handle:
        handle.write(b"raise SystemExit(3)\n")
    os.replace(path + ".new", path)


def _link_and_write(path):
    os.link(path, "/tmp/linked")
    _append("/tmp/linked")


def _remount_and_append(path):
    """In a child: a user and mount namespace of its own (all capabilities there), the lab
    folder remounted writable, then the append."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.unshare(0x10000000 | 0x00020000)  # CLONE_NEWUSER | CLONE_NEWNS
            # MS_REMOUNT | MS_BIND with the lab mount's other flags kept (nosuid, nodev,
            # noexec), MS_RDONLY dropped: only the read-only lock can refuse it
            libc.mount(None, _lab.encode(), None, 32 | 4096 | 2 | 4 | 8, None)
            _append(path)
            code = 0
        except BaseException:
            pass
        finally:
            os._exit(code)
    if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0:
        raise OSError("the append failed")


_attempts = {
    "append": _append,
    "truncate": lambda path: os.truncate(path, 0),
    "chmod": lambda path: os.chmod(path, 0o777),
    "utime": lambda path: os.utime(path, (0, 0)),
    "replace": _replace,
    "link-and-write": _link_and_write,
    "remount-and-append": _remount_and_append,
    "rename": lambda path: os.rename(path, path + ".gone"),
    "unlink": os.unlink,
}
_altered = []
for _path in _targets:
    for _name, _attempt in _attempts.items():
        with contextlib.suppress(OSError):
            _attempt(_path)
            _altered.append(f"{_name} {os.path.relpath(_path, _lab)}")
print("altered:", ", ".join(_altered) or "nothing")


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        first = view.waiting[0]
        return Batch.prefill_of(first, first.remaining_prefill)
    return Batch.decode_of(view.running)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    last_was_decode = view.previous is not None and bool(view.previous.decode)
    if view.running and not (last_was_decode and view.waiting):
        return Batch.decode_of(view.running)
    first = view.waiting[0]
    return Batch.prefill_of(first, min(chunk, first.remaining_prefill))
