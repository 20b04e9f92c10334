"""Pieces the ``infralab`` subcommands share: unit loading, golden freshness, path display."""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
from pathlib import Path

from .. import reference
from ..units import Unit, UnitError, course_root, load_unit


def add_unit(parser: argparse.ArgumentParser) -> None:
    """The ``--unit`` flag every unit-bound subcommand requires."""
    parser.add_argument("--unit", required=True)


def load_with_engine(unit_id: str) -> Unit:
    """Load a unit and make its engine (``servesim``) importable."""
    unit = load_unit(unit_id)
    reference.engine(unit)
    return unit


@contextlib.contextmanager
def collector_off():
    """The cyclic garbage collector off for the block (as it was after).

    For the commands that simulate: a run is hundreds of thousands of small lists, dicts and
    numbers in no reference cycle (``tests/grader/test_cli_collector.py``: the garbage left in
    cycles does not grow with the run), so the collector's passes would only walk live objects,
    the whole run again at each older generation (about a tenth of the whole Azure job's
    process). Reference counting still frees everything as before.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


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
