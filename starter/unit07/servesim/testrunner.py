"""Run a lab's public tests with the Python standard library alone: ``python3 run_tests.py``.

Every lab folder's ``run_tests.py`` calls ``main`` here. The same test functions as
``python3 -m pytest`` (tests/test_*.py), the same failure messages, no pytest needed.
Options: ``-k TEXT`` runs only tests whose name contains TEXT, ``-x`` stops at the first
failure, ``-s`` shows what passing tests print. Exit status 0 when every test passes, 1
otherwise.

The tests use four things from pytest: ``pytest.approx``, ``pytest.mark.parametrize``,
``pytest.fail`` and ``pytest.skip`` (an optional part not started yet). This file provides
those four (and nothing else) as a stand-in module, so it gives the same verdicts, skips and
reasons with or without pytest installed.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import itertools
import sys
import traceback
import types
from pathlib import Path

LAB_DIR = Path(sys.argv[0]).resolve().parent  # the lab folder whose run_tests.py was started
TESTS_DIR = LAB_DIR / "tests"


class Failed(Exception):
    """Raised by ``pytest.fail``; reported as ``Failed: <message>`` like pytest does."""


class Skipped(BaseException):
    """Raised by ``pytest.skip``; a BaseException, as pytest's, so no ``except Exception`` in the
    code under test can swallow it."""


class Approx:
    """``pytest.approx`` for a single number: relative 1e-6, absolute 1e-12 by default."""

    __hash__ = None  # compares by tolerance, so it cannot be hashed consistently

    def __init__(self, expected, rel=None, abs=None):  # pytest's keyword names
        self.expected = expected
        self.rel = 1e-6 if rel is None else rel
        self.abs = 1e-12 if abs is None else abs

    def tolerance(self) -> float:
        return max(self.rel * abs(self.expected), self.abs)

    def __eq__(self, other) -> bool:
        try:
            return abs(other - self.expected) <= self.tolerance()
        except TypeError:
            return False

    def __repr__(self) -> str:
        return f"{self.expected} ± {self.tolerance():.1e}"


def _parametrize(names, values):
    names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)

    def mark(function):
        cases = [v if len(names) > 1 else (v,) for v in values]
        function.__dict__.setdefault("_parametrize", []).append((names, cases))
        return function

    return mark


def _fail(message: str = "", pytrace: bool = True):
    raise Failed(message)


def _skip(reason: str = "") -> None:
    raise Skipped(reason)


def stand_in_pytest() -> types.ModuleType:
    module = types.ModuleType("pytest", "stand-in for the parts of pytest the public tests use")
    module.approx = Approx
    module.fail = _fail
    module.skip = _skip
    module.mark = types.SimpleNamespace(parametrize=_parametrize)
    return module


def _case_id(value) -> str:
    return str(value) if isinstance(value, (str, int, float, bool)) or value is None else "x"


def expand(name: str, function) -> list[tuple[str, dict]]:
    """``(node name, keyword arguments)`` per case, named and ordered as pytest names them."""
    marks = function.__dict__.get("_parametrize", [])  # innermost decorator first
    if not marks:
        return [(name, {})]
    cases = []
    for combo in itertools.product(*(m[1] for m in marks)):
        kwargs, ids = {}, []
        for (names, _), values in zip(marks, combo):
            kwargs.update(zip(names, values))
            ids += [_case_id(v) for v in values]
        cases.append((f"{name}[{'-'.join(ids)}]", kwargs))
    return cases


def load_tests(path: Path) -> list[tuple[str, object, dict]]:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = []
    for name, function in vars(module).items():
        if name.startswith("test") and callable(function):
            rel = path.relative_to(LAB_DIR).as_posix()
            found += [(f"{rel}::{node}", function, kw) for node, kw in expand(name, function)]
    return found


def describe(exc: BaseException) -> str:
    """One line, as pytest's short summary writes it."""
    if isinstance(exc, Failed):
        return f"Failed: {exc}"
    message = str(exc).splitlines()[0] if str(exc) else ""
    if isinstance(exc, AssertionError) and not message:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        return f"AssertionError: {frame.line} ({Path(frame.filename).name}:{frame.lineno})"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def run(nodes, stop_first: bool, show_output: bool) -> int:
    failed, skipped, passed = [], [], 0
    for nodeid, function, kwargs in nodes:
        captured = io.StringIO()
        sink = contextlib.nullcontext() if show_output else contextlib.redirect_stdout(captured)
        try:
            with sink:
                function(**kwargs)
        except Skipped as exc:
            skipped.append((nodeid, str(exc)))
            print("s", end="", flush=True)
        except Exception as exc:  # a failing test of any kind is reported, never fatal
            failed.append((nodeid, describe(exc)))
            print("F", end="", flush=True)
            if stop_first:
                break
        else:
            passed += 1
            print(".", end="", flush=True)
    print()
    for nodeid, reason in skipped:
        print(f"SKIPPED {nodeid} - {reason}")
    for nodeid, line in failed:
        print(f"FAILED {nodeid} - {line}")
    counts = [f"{len(failed)} failed"] if failed else []
    counts.append(f"{passed} passed")
    if skipped:
        counts.append(f"{len(skipped)} skipped")
    print(", ".join(counts))
    return 1 if failed else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="run_tests.py", description=__doc__.split("\n")[0])
    parser.add_argument("-k", dest="keyword", help="only tests whose name contains this text")
    parser.add_argument("-x", action="store_true", help="stop at the first failure")
    parser.add_argument("-s", action="store_true", help="show what the tests print")
    args = parser.parse_args(argv)
    sys.modules["pytest"] = stand_in_pytest()
    for folder in (LAB_DIR, TESTS_DIR):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    nodes = [n for path in sorted(TESTS_DIR.glob("test_*.py")) for n in load_tests(path)]
    if args.keyword:
        nodes = [n for n in nodes if args.keyword in n[0]]
    if not nodes:
        print("no tests selected", file=sys.stderr)
        return 2
    return run(nodes, args.x, args.s)
