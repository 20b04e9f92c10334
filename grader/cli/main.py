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
import contextlib
import os
import sys
from pathlib import Path

from ..units import ROOT_ENV, UnitError
from . import grade, lab, release, site, trace, units, view

# in the order ``infralab --help`` lists them
_SUBCOMMANDS = (
    units.add_units,
    lab.add_simulate,
    lab.add_run_gpu,
    lab.add_starter,
    lab.add_lab,
    site.add_site,
    grade.add_golden,
    release.add_release,
    grade.add_grade,
    trace.add_trace,
    view.add_view,
)


def user_errors() -> tuple[type[Exception], ...]:
    """Bad input (one line, exit 2) rather than a bug in infralab.

    Imported when an error arrives, so that a command loads only the modules it uses.
    """
    from servesim import TraceError

    from ..grading.errors import GradingError
    from ..traces.errors import SpecError

    return (UnitError, GradingError, SpecError, TraceError, OSError)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="infralab", description="infra-lab staff tools")
    parser.add_argument(
        "--root",
        metavar="DIR",
        help=f"course root holding labs/<unit>/unit.yaml (default: ${ROOT_ENV} or this checkout)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for add in _SUBCOMMANDS:
        add(commands)
    return parser


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
    parser = build_parser()
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
