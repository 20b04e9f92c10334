"""A process's private temp folders by key, at most a few at a time, each gone when it exits.

    folders = TempFolders("infralab-x-", keep=4)
    value = folders.get(key)                    # None, or what ``make`` returned for ``key``
    value = folders.make(key, fill)             # a fresh folder, filled by ``fill(folder)``

A grader process makes such a folder for each lab it grades (its assembled lab folder, the
sandbox's template of it). With per-student variants every student's lab is a different one,
so a process making or grading a class's variants would otherwise keep a folder per student
until it exits. Here the oldest folder is removed once ``keep`` newer ones exist (``pinned``
ones aside: a few that the process keeps for its whole life), which bounds what a long batch
holds, whatever its size; the callers use such a folder only while they grade one lab.

The process that made a folder removes it: on eviction, at a normal exit (``atexit``), and at
the exit of a forked ``multiprocessing`` worker (which skips ``atexit`` but runs
``multiprocessing``'s finalizers). A forked process inherits its parent's entries and never
removes those; evicting one only drops it from the child's table. With ``hold`` (a function
that holds a folder and returns the fd that holds it), each folder is held until it goes, so
that a sweep of abandoned folders (``grader.sandbox.host.sweep_folders``) leaves it alone.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.util import Finalize
from pathlib import Path
from typing import Any

# assembled lab folders (``grader.labfolder``), which the sweep of the folders killed graders
# left also removes (``grader.sandbox.host.sweep_folders``)
LAB_PREFIX = "infralab-lab-"


def hold_folder(folder: Path) -> int:
    """An fd holding an exclusive ``flock`` on ``folder`` while it is in use (close it to let
    go; forked processes share it): a sweep of abandoned folders leaves held folders alone."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


@dataclass
class _Entry:
    holder: Path
    owner: int  # the pid that made it, the only one that removes it
    fd: int | None = None  # the flock that holds it, when held
    value: Any = None
    pinned: bool = False
    finalizer: Finalize | None = None


class TempFolders:
    def __init__(self, prefix: str, keep: int, place: Callable[[], str | None] = lambda: None,
                 hold: Callable[[Path], int] | None = None):  # fmt: skip
        self.prefix, self.keep, self.place, self.hold = prefix, keep, place, hold
        self._entries: OrderedDict[Any, _Entry] = OrderedDict()
        atexit.register(self._remove_all)

    def get(self, key) -> Any:
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        return entry.value

    def make(self, key, fill: Callable[[Path], Any], prefix: str | None = None,
             pinned: bool = False) -> Any:  # fmt: skip
        """A new private folder for ``key`` (replacing any), named ``prefix`` (default: the
        table's) and a random tail, ``fill(folder)``'s result kept as its value; a ``fill`` that
        raises leaves no folder behind. A ``pinned`` folder stays until the process exits; the
        others are evicted, oldest first, beyond ``keep`` of them."""
        self.drop(key)
        made = tempfile.mkdtemp(prefix=prefix or self.prefix, dir=self.place())
        entry = _Entry(Path(made), os.getpid(), pinned=pinned)
        # a forked multiprocessing worker's exit skips atexit and runs only the finalizers
        # registered in that worker (it clears its parent's): one per folder, made here
        entry.finalizer = Finalize(None, _remove, args=(entry,), exitpriority=0)
        try:
            if self.hold:
                entry.fd = self.hold(entry.holder)
            entry.value = fill(entry.holder)
        except BaseException:
            _remove(entry)
            raise
        self._entries[key] = entry  # before ``fill`` returns, only ``make`` knows of it
        evictable = [k for k, e in self._entries.items() if not e.pinned]
        for old in evictable[: max(0, len(evictable) - self.keep)]:
            _remove(self._entries.pop(old))
        return entry.value

    def drop(self, key) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            _remove(entry)

    def forget(self) -> None:
        """Drop every entry from the table (tests); the folders this process made are removed."""
        self._remove_all()

    def _remove_all(self) -> None:
        while self._entries:
            _remove(self._entries.popitem()[1])

    def __contains__(self, key) -> bool:
        return key in self._entries


def _remove(entry: _Entry) -> None:
    if os.getpid() != entry.owner:
        return
    if entry.finalizer is not None:
        entry.finalizer.cancel()  # idempotent; drops the registry's reference
        entry.finalizer = None
    if entry.fd is not None:
        with contextlib.suppress(OSError):
            os.close(entry.fd)
        entry.fd = None
    shutil.rmtree(entry.holder, ignore_errors=True)
