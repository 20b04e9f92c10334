"""``infralab``: the staff command line.

This module only assembles the parser and maps errors to exit codes; each command group's
arguments and handler live in ``grader/commands_*.py`` (``release nbgrader`` in
``nbgrader_course``). A handler is ``handler(args, extra) -> exit code``; subcommands that set
``passthrough`` receive the flags argparse did not know in ``extra``.
"""

from __future__ import annotations

import argparse
import sys

from . import commands_grade, commands_lab, commands_release, commands_site, commands_trace
from .grading import GradingError
from .tracegen import SpecError
from .units import UnitError

# in the order ``infralab --help`` lists them
_SUBCOMMANDS = (
    commands_lab.add_simulate,
    commands_lab.add_run_gpu,
    commands_lab.add_starter,
    commands_site.add_site,
    commands_grade.add_golden,
    commands_release.add_release,
    commands_grade.add_grade,
    commands_trace.add_trace,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="infralab", description="infra-lab staff tools")
    commands = parser.add_subparsers(dest="command", required=True)
    for add in _SUBCOMMANDS:
        add(commands)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "passthrough", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return args.handler(args, extra)
    except Exception as exc:
        if not isinstance(exc, _user_errors()):
            raise
        print(f"infralab: error: {exc}", file=sys.stderr)
        return 2


def _user_errors() -> tuple[type[Exception], ...]:
    """Errors that mean bad input (one line, exit 2) rather than a bug in infralab."""
    errors = [UnitError, GradingError, SpecError, OSError]
    servesim = sys.modules.get("servesim")
    if servesim is not None:
        errors.append(servesim.TraceError)
    return tuple(errors)


if __name__ == "__main__":
    sys.exit(main())
