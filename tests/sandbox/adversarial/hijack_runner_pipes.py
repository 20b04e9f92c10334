"""Finding 2: takes over the runner's pipes to fake "done" answers and read later traces.

At import it tries pidfd_getfd on the parent (the runner), then /proc/<parent>/fd/0 and 1,
and writes fake answers to whatever it got and reads what it can. The runner is not dumpable,
so every attempt fails; the policies are correct.

EARNS: all
"""

import ctypes
import os

from servesim import Batch, SchedulerView

SYS_PIDFD_OPEN, SYS_PIDFD_GETFD = 434, 438
FAKE = b"done 0 none 0 0 0 0 0\n" * 64
got = []
libc = ctypes.CDLL(None, use_errno=True)
parent = os.getppid()
pidfd = libc.syscall(SYS_PIDFD_OPEN, parent, 0)
if pidfd >= 0:
    for target in (0, 1):
        fd = libc.syscall(SYS_PIDFD_GETFD, pidfd, target, 0)
        if fd >= 0:
            got.append(fd)
for target, mode in ((1, os.O_WRONLY), (0, os.O_RDONLY)):
    try:
        got.append(os.open(f"/proc/{parent}/fd/{target}", mode | os.O_NONBLOCK))
    except OSError:
        pass
for fd in got:
    try:
        os.write(fd, FAKE)
    except OSError:
        pass
    try:
        print("read", len(os.read(fd, 1 << 16)))
    except OSError:
        pass
print("took", len(got), "runner pipes")


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
