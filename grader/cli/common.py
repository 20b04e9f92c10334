"""Pieces the ``infralab`` subcommands share: unit loading, golden freshness, path display."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import reference
from ..units import Unit, course_root, load_unit


def add_unit(parser: argparse.ArgumentParser) -> None:
    """The ``--unit`` flag every unit-bound subcommand requires."""
    parser.add_argument("--unit", required=True)


def load_with_engine(unit_id: str) -> Unit:
    """Load a unit and make its engine (``servesim``) importable."""
    unit = load_unit(unit_id)
    reference.engine(unit)
    return unit


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
