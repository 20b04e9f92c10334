"""A case tries to change the lab's own files in its case folder, so that the submissions graded
after it (by the same grader process, whose case folders share the lab's files) would break.

At import it appends ``raise SystemExit(3)`` to the engine, truncates its bytecode, changes
their modes and times, renames, unlinks, hard-links and replaces them, and prints every change
that went through (``altered: ...``). The case folder is read-only for the child, so none does;
the policies themselves are correct.

EARNS: all
"""

import contextlib
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


_attempts = {
    "append": _append,
    "truncate": lambda path: os.truncate(path, 0),
    "chmod": lambda path: os.chmod(path, 0o777),
    "utime": lambda path: os.utime(path, (0, 0)),
    "replace": _replace,
    "link-and-write": _link_and_write,
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
