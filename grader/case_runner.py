"""Run several cases of one submission in one interpreter (copied into the sandbox's case folder).

    python -I -S -B _infralab_runner.py JOBS.json OUT_DIR

This file runs INSIDE the sandbox, next to the student's code, so nothing it writes is trusted:
the grader reads its files back with the same checks as any run file and verifies every run.
It only saves interpreter starts. Per case, in order: ``policies`` is imported afresh,
``simulate.py``'s ``main`` runs (with the lab's modules re-imported and ``sys.argv`` set as
``simulate.py`` would see it) with stdout/stderr captured to files, a CPU timer stops a case
that runs past its share, and ``NAME.status`` is written last (the grader counts those to see
progress). Standard library only.
"""

import json
import os
import signal
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


class CaseCpuTimeout(BaseException):
    """The case used up its CPU seconds (a BaseException: `except Exception` misses it)."""


def _on_timer(signum, frame):
    raise CaseCpuTimeout


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def _fresh_simulator():
    """``servesim.cli.main`` from a fresh import: no module state (or monkeypatch) of the
    student's code survives from one case to the next, in the lab's own modules at least."""
    for name in [n for n in sys.modules if n == "policies" or n.split(".")[0] == "servesim"]:
        del sys.modules[name]
    from servesim.cli import main

    return main


def run_case(case, out_dir, cpu_seconds):
    base = os.path.join(out_dir, case["name"])
    argv = ["--trace", os.path.join(HERE, case["trace"]), *case["argv"], "--output", base + ".json"]
    code, limit = 1, None
    real_out, real_err = sys.stdout, sys.stderr
    with (
        open(base + ".stdout", "w", encoding="utf-8") as out,
        open(base + ".stderr", "w", encoding="utf-8") as err,
    ):
        sys.stdout, sys.stderr = out, err
        sys.argv = ["simulate.py", *argv]
        signal.setitimer(signal.ITIMER_PROF, cpu_seconds)
        try:
            code = _fresh_simulator()(argv)
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=err)
                code = 1
        except CaseCpuTimeout:
            code, limit = None, "CPU time"
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            sys.stdout, sys.stderr = real_out, real_err
    _write(base + ".status", json.dumps({"code": code, "limit": limit}))


def main():
    jobs_path, out_dir = sys.argv[1], sys.argv[2]
    with open(jobs_path, encoding="utf-8") as handle:
        jobs = json.load(handle)
    signal.signal(signal.SIGPROF, _on_timer)
    for case in jobs["cases"]:
        run_case(case, out_dir, jobs["cpuSeconds"])


if __name__ == "__main__":
    main()
