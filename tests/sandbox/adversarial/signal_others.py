"""Finding 7: tries to kill every process it can see that is not its own (another grader's
children, the grader itself), then schedules correctly.

A dedicated uid per child, reserved across grader processes, and a PID namespace under
bubblewrap leave it nothing to kill but its own processes.

EARNS: all
"""

import os
import signal

from servesim import Batch, SchedulerView

_me, _killed = os.getpid(), 0
for _pid in os.listdir("/proc"):
    if not _pid.isdigit() or int(_pid) in (_me, os.getppid(), 1):
        continue
    try:
        if os.stat(f"/proc/{_pid}").st_uid == os.getuid():
            continue
        os.kill(int(_pid), signal.SIGKILL)
        _killed += 1
    except OSError:
        pass
print(f"killed {_killed} processes of other users")


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
