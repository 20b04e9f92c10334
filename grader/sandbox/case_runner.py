"""Run several cases of one submission from one interpreter (copied into the sandbox's case
folder, with ``compile_budget.py`` as ``_infralab_compile_budget.py`` beside it).

    python -I -S -B _infralab_runner.py OUT_DIR CPU_SECONDS RUN_CAP TAIL_CAP COMPILE_SECONDS
        [SOURCE ...]

This file runs INSIDE the sandbox, so nothing it sends is trusted: the grader checks every
frame's size and verifies every run. It only saves interpreter starts, imports and compiling.
The lab's modules are imported once; each case then runs in a process forked from this one, so
what a case does to module state (monkeypatches included) dies with it, and its exit status is
a real one (``os._exit``, signals). The submission's files (``SOURCE``: names in this folder)
are compiled once before the first case, never run here: each in a forked process with
``COMPILE_SECONDS`` of CPU time, so a file that does not compile in time fails only the cases
that import it (``CompileBudgetError`` names it). Each case process imports them afresh from
that code.

Protocol: the grader writes ``case <length> <name>\\n`` and a JSON body (simulate.py flags,
trace; optionally ``script``: another given script of the lab folder, called as ``main(argv)``
with ``--input`` instead of ``--trace``) to stdin, one case at a time. This process reads only
the header; the forked case process reads the body, so this process never holds any trace. The
case process points fd 0 at /dev/null and fd 1 and 2 at files in its own folder
``OUT_DIR/NAME/``, arms a CPU timer (SIGPROF ends it after its share), writes its trace there,
sets ``sys.argv`` as ``simulate.py`` would and calls ``main``. When it has ended, this process
kills whatever the case left running (the sandbox makes ``kill(-1)`` safe: a PID namespace or a
dedicated uid), reads the case's stdout/stderr tails and run file, deletes the case folder and
answers with ONE frame on stdout::

    done <exit code> <run state> <stdout bytes> <stderr bytes> <run bytes>
         <stdout size> <stderr size>\\n   (one line)
    <stdout tail><stderr tail><run file>

(``run state``: ``ok``, ``none`` or a one-word reason it was rejected). So the grader has each
case's results before it sends the next case, and no later case can touch them.

This process makes itself non-dumpable first: a case process (same uid) can then neither
ptrace it, nor take its pipes with ``pidfd_getfd``, nor open ``/proc/<pid>/fd``.
Standard library only.
"""

import contextlib
import ctypes
import gc
import json
import math
import os
import resource
import shutil
import signal
import stat
import sys
import traceback  # imported here, once, not by every case that fails

HERE = os.path.dirname(os.path.abspath(__file__))
SIMULATE = "simulate.py"  # other given scripts get --input instead of --trace
sys.path.insert(0, HERE)
PR_SET_DUMPABLE = 4
# What the course's given files import besides the lab's modules (unit 08's measure.py starter):
# imported once here, not again by every case process (about 8 ms a case).
WARM_IMPORTS = ("statistics", "hashlib")

import _infralab_compile_budget as compile_budget  # noqa: E402  (compile_budget.py, copied here)


def _not_dumpable():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise SystemExit("runner: prctl(PR_SET_DUMPABLE, 0) failed")


def _read_header():
    """(length, name) from ``case <length> <name>`` on stdin, one byte at a time (nothing of
    the body is read here); None at the end of input or on anything else."""
    line = b""
    while not line.endswith(b"\n"):
        byte = os.read(0, 1)
        if not byte:
            return None
        line += byte
        if len(line) > 128:
            return None
    parts = line.decode("ascii", "replace").split()
    if len(parts) != 3 or parts[0] != "case" or not parts[1].isdigit():
        return None
    if not all(ch.isalnum() or ch == "-" for ch in parts[2]):
        return None
    return int(parts[1]), parts[2]


def _read_body(length):
    data = b""
    while len(data) < length:
        chunk = os.read(0, length - len(data))
        if not chunk:
            raise EOFError("the case body ended early")
        data += chunk
    return json.loads(data)


def _case_process(main, length, folder, cpu_seconds):
    """In the forked process: read and run one case, exit with its status (never returns)."""
    code = 1
    try:
        case = _read_body(length)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            target = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT, 0o600)
            os.dup2(target, fd)
            os.close(target)
        trace = os.path.join(folder, "trace.json")
        with open(trace, "w", encoding="utf-8") as handle:
            handle.write(case["trace"])
        script = case.get("script") or SIMULATE
        flag = "--trace" if script == SIMULATE else "--input"
        argv = [flag, trace, *case["argv"], "--output", os.path.join(folder, "run.json")]
        case = None  # nothing of the protocol stays reachable from the student's code
        if script != SIMULATE:  # a given script of the lab folder with main(argv)
            stem = script[:-3] if script.endswith(".py") else ""
            if not stem.replace("_", "").isalnum():
                raise ValueError("bad script name")

            def main(argv, stem=stem):  # imported on the case's clock, errors reported
                return __import__(stem).main(argv)

        signal.signal(signal.SIGPROF, signal.SIG_DFL)  # default action: terminate
        signal.setitimer(signal.ITIMER_PROF, cpu_seconds)
        soft = math.ceil(cpu_seconds)  # should the case ignore SIGPROF: SIGXCPU, then SIGKILL
        resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 1))
        sys.argv = [script, *argv]
        code = _call(main, argv)
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) and 0 <= code < 256 else 1)


def _call(main, argv):
    try:
        return main(argv)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1


def _open_plain(path):
    """(file, size) of a regular one-link file, opened without following links; None else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        return None
    return os.fdopen(fd, "rb"), info.st_size


def _tail(path, cap):
    opened = _open_plain(path)
    if opened is None:
        return b"", 0
    handle, size = opened
    with handle:
        handle.seek(max(0, size - cap))
        return handle.read(cap), size


def _run_file(path, cap):
    """(state, bytes): ``ok`` with the file, ``none``, or a one-word reason it is rejected."""
    if not os.path.lexists(path):
        return "none", b""
    opened = _open_plain(path)
    if opened is None:
        return "not-a-plain-file", b""
    handle, size = opened
    with handle:
        if size > cap:
            return "too-large", b""
        data = handle.read(cap + 1)
    return ("ok", data) if len(data) <= cap else ("too-large", b"")


def _kill_leftovers():
    with contextlib.suppress(OSError):
        os.kill(-1, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _answer(folder, code, run_cap, tail_cap):
    out, out_size = _tail(os.path.join(folder, "stdout"), tail_cap)
    err, err_size = _tail(os.path.join(folder, "stderr"), tail_cap)
    state, run = _run_file(os.path.join(folder, "run.json"), run_cap)
    shutil.rmtree(folder, ignore_errors=True)
    head = f"done {code} {state} {len(out)} {len(err)} {len(run)} {out_size} {err_size}\n"
    data = head.encode() + out + err + run
    while data:
        data = data[os.write(1, data) :]


class CompileBudgetError(ImportError):
    """A submission file that did not compile within the compile budget (raised by the
    import of that file only, so only the cases that use it fail)."""


def _precompile(names, budget_s):
    """Compile the top-level source files ``names`` of this folder, each in a forked process
    under ``budget_s`` CPU seconds (``compile_budget.compile_files``), and have every later
    import of one of them (each case process's) take that code instead of compiling the file
    again. Nothing runs here; tracebacks name the file and line as before. A file whose
    compiling raises or warns is left to the normal import, so the case reports it as it always
    did; importing a file that did not compile within its budget raises
    ``CompileBudgetError`` naming the file."""
    from importlib import machinery

    codes = compile_budget.compile_files(HERE, names, budget_s)
    if not codes:
        return

    class Precompiled(machinery.SourceFileLoader):
        def get_code(self, fullname):
            code = codes.get(self.path)
            if code is compile_budget.TOO_SLOW:
                name = os.path.basename(self.path)
                raise CompileBudgetError(
                    f"{name} did not compile within the {budget_s:g} s compile budget"
                )
            return code if code is not None else super().get_code(fullname)

    loaders = [
        (machinery.ExtensionFileLoader, machinery.EXTENSION_SUFFIXES),
        (Precompiled, machinery.SOURCE_SUFFIXES),
        (machinery.SourcelessFileLoader, machinery.BYTECODE_SUFFIXES),
    ]  # the import system's own order for a folder on sys.path
    sys.path_importer_cache[HERE] = machinery.FileFinder(HERE, *loaders)


def _simulate_main():
    """``simulate.py``'s ``main``, warmed before any case is forked, writing run files without
    indentation.

    The warm-up loads ``lab.json`` and builds the parser once (each case process finds them
    made, instead of making them again in pages it must first copy from this one) and parses a
    ``--trace`` once: argparse compiles the pattern that every case's flags need on first use.
    No student code runs here: each case process imports ``policies.py`` itself. Whitespace in
    a run file means nothing to the grader, and Python's indenting JSON encoder is several
    times slower than its compact one.
    """
    import functools

    from servesim import cli

    for name in WARM_IMPORTS:  # trusted standard library modules, never the submission's
        with contextlib.suppress(ImportError):
            __import__(name)

    with contextlib.suppress(SystemExit):  # a warm-up only (argparse exits on a bad flag)
        cli.parser_for(cli.load_lab()).parse_known_args(["--trace", "warm-up"])
    return functools.partial(cli.main, encode=lambda doc, indent=None: cli.dumps(doc, None))


def main():
    _not_dumpable()
    out_dir, cpu_seconds = sys.argv[1], float(sys.argv[2])
    run_cap, tail_cap = int(sys.argv[3]), int(sys.argv[4])
    simulate_main = _simulate_main()
    _precompile(sys.argv[6:], float(sys.argv[5]))
    gc.freeze()  # what is made so far: a case process's collections then touch fewer pages

    while True:
        header = _read_header()
        if header is None:
            return
        length, name = header
        folder = os.path.join(out_dir, name)
        os.mkdir(folder, 0o700)
        try:
            pid = os.fork()
        except OSError:  # the process limit: give up, the grader decides about the rest
            return
        if pid == 0:
            _case_process(simulate_main, length, folder, cpu_seconds)
        _, status = os.waitpid(pid, 0)
        _kill_leftovers()
        _answer(folder, os.waitstatus_to_exitcode(status), run_cap, tail_cap)


if __name__ == "__main__":
    main()
    sys.stderr.flush()
    os._exit(0)  # no interpreter teardown: it frees nothing the kernel does not free at exit
