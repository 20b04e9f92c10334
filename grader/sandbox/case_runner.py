"""Run several cases of one submission from one interpreter (copied into the sandbox's case folder).

    python -I -S -B _infralab_runner.py OUT_DIR CPU_SECONDS kill|keep

This file runs INSIDE the sandbox, so nothing it writes is trusted: the grader reads its files
back with the same checks as any run file and verifies every run. It only saves interpreter
starts and imports. The lab's modules are imported once; each case then runs in a process
forked from this one, so what a case does to module state (monkeypatches included) dies with
it, and its exit status is a real one (``os._exit``, signals).

Protocol: the grader writes ``case <length>\\n`` and a JSON body (simulate.py flags, trace, and
optionally ``script``: another given script of the lab folder, run as ``main(argv)`` with
``--input`` instead of ``--trace``) to stdin, one case at a time, and sends the next case only
after reading ``done`` on this process's stdout. This process reads only the header; the forked
case process reads the body, so this process never holds any trace. The case process points fd 0
at /dev/null and fd 1 and 2 at ``NAME.stdout``/``NAME.stderr``, arms a CPU timer (SIGPROF ends
it after its share), writes its trace to ``NAME.trace.json``, sets ``sys.argv`` as
``simulate.py`` would and calls ``main`` (which imports ``policies`` afresh). This process then
removes the trace, kills what the case left running (where the sandbox makes ``kill(-1)`` safe),
writes ``NAME.status`` and says ``done``. Standard library only.
"""

import contextlib
import json
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SIMULATE = "simulate.py"  # other given scripts get --input instead of --trace
sys.path.insert(0, HERE)


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


def _case_process(main, length, base, cpu_seconds):
    """In the forked process: read and run one case, exit with its status (never returns)."""
    code = 1
    try:
        case = _read_body(length)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        for fd, suffix in ((1, ".stdout"), (2, ".stderr")):
            target = os.open(base + suffix, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
            os.close(target)
        trace = base + ".trace.json"
        with open(trace, "w", encoding="utf-8") as handle:
            handle.write(case["trace"])
        script = case.get("script") or SIMULATE
        flag = "--trace" if script == SIMULATE else "--input"
        argv = [flag, trace, *case["argv"], "--output", base + ".json"]
        case = None  # nothing of the protocol stays reachable from the student's code
        if script != SIMULATE:  # a given script of the lab folder with main(argv)
            stem = script[:-3] if script.endswith(".py") else ""
            if not stem.replace("_", "").isalnum():
                raise ValueError("bad script name")
            main = __import__(stem).main
        signal.signal(signal.SIGPROF, signal.SIG_DFL)  # default action: terminate
        signal.setitimer(signal.ITIMER_PROF, cpu_seconds)
        sys.argv = [script, *argv]
        try:
            code = main(argv)
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code if isinstance(code, int) and 0 <= code < 256 else 1)


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def main():
    out_dir, cpu_seconds, leftovers = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    from servesim.cli import main as simulate_main

    while True:
        header = _read_header()
        if header is None:
            return
        length, name = header
        base = os.path.join(out_dir, name)
        try:
            pid = os.fork()
        except OSError:  # the process limit: give up, the grader runs the rest afresh
            return
        if pid == 0:
            _case_process(simulate_main, length, base, cpu_seconds)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if leftovers == "kill":  # alone in a PID namespace or under a dedicated uid
            with contextlib.suppress(OSError):
                os.kill(-1, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
        with contextlib.suppress(OSError):
            os.unlink(base + ".trace.json")
        _write(base + ".status", json.dumps({"code": code}))
        os.write(1, b"done\n")


if __name__ == "__main__":
    main()
