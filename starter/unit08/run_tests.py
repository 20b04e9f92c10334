#!/usr/bin/env python3
"""Run a lab's public tests with python3 alone (no pytest needed; pytest runs them too).

    python3 run_tests.py                 # every tests/test_*.py of this lab folder
    python3 run_tests.py -k part2        # only tests whose name contains "part2"
    python3 run_tests.py -s              # show what passing tests print
    python3 run_tests.py path/to/tests   # another folder of test_*.py files

A test is a function named ``test_*`` without arguments in a ``test_*.py`` file; it fails when
it raises. Failures print the test's name and its message (one line per failure, the first line
of the message), then a summary; the exit status is 0 when every selected test passed, 1 when
any failed, 2 when nothing matched. The file has no unit-specific code: every lab can ship it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent


def discover(folder: Path, keyword: str | None):
    """``(module name, function name, function)`` in file order, then definition order."""
    for path in sorted(folder.glob("test_*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        tests = [
            (getattr(value, "__code__", None), name, value)
            for name, value in vars(module).items()
            if name.startswith("test_") and callable(value)
        ]
        tests.sort(key=lambda t: t[0].co_firstlineno if t[0] else 0)
        for _, name, function in tests:
            if keyword is None or keyword in f"{path.stem}::{name}":
                yield path.stem, name, function


def run_one(function, show_output: bool) -> tuple[bool, str, str]:
    """(passed, failure message, captured output)."""
    buffer = io.StringIO()
    sink = contextlib.nullcontext() if show_output else contextlib.redirect_stdout(buffer)
    try:
        with sink:
            function()
    except AssertionError as exc:
        message = str(exc) or _where(exc)
        return False, message, buffer.getvalue()
    except Exception as exc:  # an error in the code under test is a failure too
        return False, f"{type(exc).__name__}: {exc} ({_where(exc)})", buffer.getvalue()
    return True, "", buffer.getvalue()


def _where(exc: BaseException) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return f"at {Path(frame.filename).name}:{frame.lineno}: {frame.line}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="run_tests.py", description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default=str(HERE / "tests"))
    parser.add_argument("-k", dest="keyword", help="run only tests whose name contains this")
    parser.add_argument("-s", dest="show", action="store_true", help="show test output")
    args = parser.parse_args(argv)
    folder = Path(args.folder).resolve()
    for path in (HERE, folder):  # the lab folder (policies.py, servesim) and the test helpers
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    start, failed, passed = time.perf_counter(), [], 0
    for module, name, function in discover(folder, args.keyword):
        ok, message, _ = run_one(function, args.show)
        if ok:
            passed += 1
            print(f"PASS {module}::{name}")
        else:
            failed.append(name)
            first = message.strip().splitlines()[0] if message.strip() else "failed"
            print(f"FAIL {module}::{name}: {first}")
    if not passed and not failed:
        print("no tests matched")
        return 2
    print(f"{passed} passed, {len(failed)} failed in {time.perf_counter() - start:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
