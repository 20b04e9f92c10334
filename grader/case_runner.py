"""Run several cases of one submission from one interpreter (copied into the sandbox's case folder).

    python -I -S -B _infralab_runner.py JOBS.json OUT_DIR

This file runs INSIDE the sandbox, so nothing it writes is trusted: the grader reads its files
back with the same checks as any run file and verifies every run. It only saves interpreter
starts and imports. The lab's modules are imported once; each case then runs in a process
forked from this one, so what a case does to module state (monkeypatches included) dies with
it, and its exit status is a real one (``os._exit``, signals). Per case, in order: the forked
process points fd 1 and 2 at ``NAME.stdout``/``NAME.stderr``, arms a CPU timer (SIGPROF ends
it after its share), sets ``sys.argv`` as ``simulate.py`` would and calls ``main``, which
imports ``policies`` afresh; this process then writes ``NAME.status`` (the grader counts those
to see progress) and, where the sandbox allows it, kills whatever the case left running.
Standard library only.
"""

import contextlib
import json
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _case_process(main, case, base, cpu_seconds):
    """In the forked process: run one case and exit with its status (never returns)."""
    code = 1
    try:
        for fd, suffix in ((1, ".stdout"), (2, ".stderr")):
            target = os.open(base + suffix, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
            os.close(target)
        signal.signal(signal.SIGPROF, signal.SIG_DFL)  # default action: terminate
        signal.setitimer(signal.ITIMER_PROF, cpu_seconds)
        argv = ["--trace", os.path.join(HERE, case["trace"]), *case["argv"]]
        argv += ["--output", base + ".json"]
        sys.argv = ["simulate.py", *argv]
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


def run_case(main, case, out_dir, jobs):
    base = os.path.join(out_dir, case["name"])
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        pid = os.fork()
    except OSError as exc:  # the process limit: the case cannot even start
        _write(base + ".stderr", f"cannot start the case: {exc}\n")
        _write(base + ".status", json.dumps({"code": 1}))
        return
    if pid == 0:
        _case_process(main, case, base, jobs["cpuSeconds"])
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if jobs.get("killLeftovers"):  # alone in a PID namespace or under a dedicated uid
        with contextlib.suppress(OSError):
            os.kill(-1, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
    _write(base + ".status", json.dumps({"code": code}))


def main():
    jobs_path, out_dir = sys.argv[1], sys.argv[2]
    with open(jobs_path, encoding="utf-8") as handle:
        jobs = json.load(handle)
    from servesim.cli import main as simulate_main

    for case in jobs["cases"]:
        run_case(simulate_main, case, out_dir, jobs)


if __name__ == "__main__":
    main()
