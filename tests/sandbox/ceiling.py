"""Run a grading call in a forked child under a memory ceiling, so that an attack that breaks a
bound of the grader fails its test instead of taking the test machine down.

    value, peak_mb = under_ceiling(lambda: grade_submission(...), memory_mb=3072, timeout_s=300)

The child's address space is capped at its size when forked plus ``memory_mb`` (RLIMIT_AS,
inherited by everything it starts); the value comes back pickled. ``peak_mb`` is how far the
grading process's resident memory grew above what it had when forked (its judging and sandbox
children have ceilings of their own). A child that dies, raises or outlives ``timeout_s`` makes
the call raise ``AssertionError`` with what happened.
"""

from __future__ import annotations

import os
import pickle
import resource
import select
import signal
import time
import traceback


def _rss_kb() -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _vm_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def under_ceiling(call, *, memory_mb: int = 3072, timeout_s: float = 300):
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        code = 0
        try:
            cap = _vm_bytes() + (memory_mb << 20)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
            start_kb = _rss_kb()
            try:
                value = ("ok", call())
            except BaseException:  # the test reports it
                value = ("raised", traceback.format_exc())
            peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            body = pickle.dumps((value, max(0, peak_kb - start_kb) / 1024))
            with os.fdopen(write_fd, "wb") as pipe:
                pipe.write(body)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    data, deadline = b"", time.monotonic() + timeout_s
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while True:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([pipe], [], [], wait)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise AssertionError(f"the grading did not finish within {timeout_s:g} s")
            chunk = pipe.read(1 << 20)
            if not chunk:
                break
            data += chunk
    _, status = os.waitpid(pid, 0)
    if not data:
        raise AssertionError(f"the grading process died (wait status {status}) under the ceiling")
    (kind, value), peak_mb = pickle.loads(data)
    if kind != "ok":
        raise AssertionError(f"grading raised under the memory ceiling:\n{value}")
    return value, peak_mb
