"""Compile a submission's source files, each in a forked process within a CPU budget (copied
into the sandbox's case folder as ``_infralab_compile_budget.py``, next to the runner,
``case_runner.py``, which imports it; standard library only).

    compile_files(folder, names, budget_s) -> {path: code object | TOO_SLOW}
    compile_within(path, budget_s) -> code object | TOO_SLOW | None

The forked process gets ``budget_s`` CPU seconds (``ITIMER_PROF``, then ``RLIMIT_CPU``) and the
caller waits twice that plus half a second of wall time. Nothing of the file runs here:
``compile`` is what the import system would call on the same bytes with the same path.
"""

import contextlib
import math
import os
import resource
import signal

COMPILE_FAILED = 2  # compiling raised or warned: the normal import reports it in the case
NOT_COMPILED = 4  # the compiling process could not set itself up: the normal import compiles
TOO_SLOW = object()  # the file did not compile within its budget


def compile_files(folder, names, budget_s):
    """The top-level source files ``names`` of ``folder`` (others are passed over), each
    compiled by ``compile_within``: path -> code, or ``TOO_SLOW``; a file whose compiling
    raised, or that no process could compile, is left out (its import compiles it)."""
    codes = {}
    for name in names:
        if not name.endswith(".py") or os.sep in name:
            continue
        path = os.path.join(folder, name)
        code = compile_within(path, budget_s)
        if code is not None:
            codes[path] = code
    return codes


def compile_within(path, budget_s):
    """The code of the file at ``path``, compiled in a forked process with ``budget_s`` CPU
    seconds (SIGPROF, then RLIMIT_CPU, end it) and twice that plus half a second of wall time;
    ``TOO_SLOW`` when it did not finish (or ran out of memory); None when compiling raised, or
    when no process could compile it (the case's own import then does, on the case's clock)."""
    import marshal
    import select
    import time

    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # the process limit: the case's import compiles it instead
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:
        os.close(read_fd)
        _compile_child(path, budget_s, write_fd)
    os.close(write_fd)
    data, deadline = b"", time.monotonic() + 2 * budget_s + 0.5
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while True:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([pipe], [], [], wait)[0]:
                os.kill(pid, signal.SIGKILL)
                break
            chunk = pipe.read(1 << 20)
            if not chunk:
                break
            data += chunk
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if status == 0:
        return marshal.loads(data)
    return None if status in (COMPILE_FAILED, NOT_COMPILED) else TOO_SLOW


def _compile_child(path, budget_s, write_fd):
    """In the forked compiling process: compile, send the marshalled code, exit (never
    returns). Exit status 0: sent; ``COMPILE_FAILED``: compiling raised or warned;
    ``NOT_COMPILED``: this process could not start compiling; else (a signal, MemoryError):
    too slow or too big."""
    import marshal
    import warnings

    code = NOT_COMPILED
    try:
        signal.signal(signal.SIGPROF, signal.SIG_DFL)
        signal.setitimer(signal.ITIMER_PROF, budget_s)
        _lower_cpu_limit(math.ceil(budget_s) + 1)
        with open(path, "rb") as handle:
            source = handle.read()
        code = 3
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                compiled = compile(source, path, "exec", dont_inherit=True)
        except MemoryError:
            raise
        except Exception:  # the normal import reports it in the case
            code = COMPILE_FAILED
            return
        data = marshal.dumps(compiled)
        signal.setitimer(signal.ITIMER_PROF, 0)
        with os.fdopen(write_fd, "wb", buffering=0) as pipe:
            while data:
                data = data[pipe.write(data) :]
        code = 0
    finally:
        os._exit(code)


def _lower_cpu_limit(seconds):
    """RLIMIT_CPU of this (fresh) process: ``seconds``, never above the hard limit it has."""
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        seconds = min(seconds, hard - 1)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (max(seconds, 1), max(seconds, 1) + 1))
