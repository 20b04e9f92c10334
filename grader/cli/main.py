"""``infralab``: the staff command line.

This module only assembles the parser and maps errors to exit codes; each command group's
arguments and handler live in ``grader/cli/<group>.py`` (``release nbgrader`` in
``grader/course/nbgrader_course.py``). A handler is ``handler(args, extra) -> exit code``;
subcommands that set ``passthrough`` receive the flags argparse did not know in ``extra``.

``--root DIR`` (or ``$INFRALAB_ROOT``) points every command at another course root: a folder with
``labs/<unit>/unit.yaml`` and the folders those files name (lab folder, solutions, traces).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import gc
import importlib
import os
import sys
from pathlib import Path

from ..units import ROOT_ENV, UnitError

# At exit the interpreter makes one last collection pass over every object (modules, numpy,
# the run) only to free memory the operating system takes back anyway: about 45 ms of every
# infralab process. Frozen objects are left out of it; atexit callbacks (registered later, so
# run earlier) and the freeing of module globals by reference counting still happen, and every
# file a command writes is closed before the command returns.
atexit.register(gc.freeze)

# (command, module of grader/cli, its adder), in the order ``infralab --help`` lists them
_SUBCOMMANDS = (
    ("units", "units", "add_units"),
    ("simulate", "lab", "add_simulate"),
    ("run-gpu", "lab", "add_run_gpu"),
    ("serve", "serve", "add_serve"),
    ("starter", "lab", "add_starter"),
    ("lab", "lab", "add_lab"),
    ("site", "site", "add_site"),
    ("golden", "grade", "add_golden"),
    ("release", "release", "add_release"),
    ("grade", "grade", "add_grade"),
    ("similarity", "similarity", "add_similarity"),
    ("autograde", "autograde", "add_autograde"),
    ("trace", "trace", "add_trace"),
    ("view", "view", "add_view"),
)


def user_errors() -> tuple[type[Exception], ...]:
    """Bad input (one line, exit 2) rather than a bug in infralab.

    Imported when an error arrives, so that a command loads only the modules it uses.
    """
    from servesim import TraceError

    from ..grading.errors import GradingError
    from ..traces.errors import SpecError

    return (UnitError, GradingError, SpecError, TraceError, OSError)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or (``only``) the parser of one command alone: a command then
    imports only its own module (``infralab simulate`` never loads the release tools)."""
    parser = argparse.ArgumentParser(prog="infralab", description="infra-lab staff tools")
    parser.add_argument(
        "--root",
        metavar="DIR",
        help=f"course root holding labs/<unit>/unit.yaml (default: ${ROOT_ENV} or this checkout)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name, module, adder in _SUBCOMMANDS:
        if only in (None, name):
            getattr(importlib.import_module(f"{__package__}.{module}"), adder)(commands)
    return parser


def _command(argv: list[str]) -> str | None:
    """The command ``argv`` names, if it names one (what follows ``--root DIR`` or the first
    word that is not an option)."""
    words = iter(argv)
    for word in words:
        if word == "--root":
            next(words, None)
        elif not word.startswith("-"):
            return word if word in {name for name, _, _ in _SUBCOMMANDS} else None
        elif not word.startswith("--root="):
            return None  # -h and the like: the whole parser answers
    return None


@contextlib.contextmanager
def _course_root(root: str | None):
    """``$INFRALAB_ROOT`` set to ``root`` for the command (and its child processes)."""
    if root is None:
        yield
        return
    if not (Path(root) / "labs").is_dir():
        raise UnitError(f"--root {root}: no labs/ folder there")
    old = os.environ.get(ROOT_ENV)
    os.environ[ROOT_ENV] = str(Path(root).resolve())
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(ROOT_ENV, None)
        else:
            os.environ[ROOT_ENV] = old


def main(argv=None) -> int:
    """Run one command. Its output piped into a reader that stops early (``| head``) ends it
    quietly, as a process killed by SIGPIPE (exit 141), with no traceback or error line."""
    try:
        code = _run(argv)
        sys.stdout.flush()  # a reader gone shows up here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the exit's own flush must not fail again
        return 141


def _run(argv) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command(argv))
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "passthrough", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        with _course_root(args.root):
            return args.handler(args, extra)
    except Exception as exc:
        if isinstance(exc, BrokenPipeError) or not isinstance(exc, user_errors()):
            raise
        print(f"infralab: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
