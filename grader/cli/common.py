"""Pieces the ``infralab`` subcommands share: unit loading, golden freshness, path display."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

from ..units import Unit, UnitError, course_root


def add_unit(parser: argparse.ArgumentParser) -> None:
    """The ``--unit`` flag every unit-bound subcommand requires."""
    parser.add_argument("--unit", required=True)


def stale_golden(unit: Unit) -> list:
    """The golden statuses of ``unit`` that are not OK (missing, stale, orphan), in order."""
    from ..course import golden

    return [s for s in golden.check_golden(unit) if s.state is not golden.GoldenState.OK]


def show_path(path: Path) -> str:
    """``path`` relative to the course root when it lies inside it, else as given."""
    try:
        return str(Path(path).resolve().relative_to(course_root()))
    except ValueError:
        return str(path)


def with_extra(module: str, extra: str):
    """Import ``module``, whose command needs the pyproject extra ``extra``.

    A missing dependency is one error line naming the extra to install, not a traceback.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if (exc.name or "grader").partition(".")[0] == "grader":
            raise
        raise UnitError(
            f"this command needs the '{extra}' extra ({exc.name} is not installed): "
            f"bash scripts/setup.sh {extra}"
        ) from None
