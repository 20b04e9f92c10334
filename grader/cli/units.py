"""``infralab units``: the units of the course root, one line each."""

from __future__ import annotations

from ..units import UnitError, course_root, load_unit, unit_ids
from .common import show_path


def _units(args, extra: list[str]) -> int:
    from ..cases import load_grading

    ids = unit_ids()
    if not ids:
        raise UnitError(f"no unit in {course_root() / 'labs'} (no labs/<unit>/unit.yaml)")
    for unit_id in ids:
        unit = load_unit(unit_id)
        cases = load_grading(unit).cases if "grading" in unit.doc else ()
        hidden = sum(1 for case in cases if case.hidden)
        policies = ", ".join(p["name"] for p in unit.policies)
        print(
            f"{unit.id}  {unit.title}  lab {show_path(unit.lab_dir)}  policies {policies}  "
            f"cases {len(cases)} ({hidden} hidden)"
        )
    return 0


def add_units(commands) -> None:
    parser = commands.add_parser("units", help="list the course's units (labs/<unit>/unit.yaml)")
    parser.set_defaults(handler=_units)
