"""``infralab release nbgrader --roster``: the nbgrader student version, once per student.

    release_students(unit, course, ids, secret) -> [zip, ...]
    add_arguments(parser); checked_roster(args); from_roster(...)   # the command's flags

``nbgrader generate_assignment`` writes one student version for everyone
(``release/<unit>/``). With variants, each student works in a copy of it that holds their own
public traces and expected snapshots (``nbkeys.own_files``), so the notebook they run computes
their own numbers, the numbers autograde checks (``nbautograde``):

    release/students/<id>/infra-lab-<unit>-nbgrader.zip

Every variant is made before any zip is written, and each zip is written atomically.
"""

from __future__ import annotations

from pathlib import Path

from ..course.release import build_folder_zip, lab_root
from ..labfolder import tree
from ..units import Unit, UnitError
from . import nbkeys
from .identity import variant_for
from .keys import load_secret
from .roster import read_roster

STUDENTS = "students"  # under the course's release/ folder


def release_students(unit: Unit, course: Path, ids: list[str], secret: bytes) -> list[Path]:
    """One zip per student of ``release/<unit>/`` with that student's own public files."""
    shared = Path(course) / "release" / unit.id
    if not shared.is_dir():
        raise UnitError(f"{shared} does not exist: generate the assignment first")
    files = tree(shared)
    variants = {student: variant_for(unit, student, secret) for student in ids}
    written = []
    for student, variant in variants.items():
        dest = shared.parent / STUDENTS / student / f"{lab_root(unit)}-nbgrader.zip"
        written.append(build_folder_zip(files | nbkeys.own_files(variant), lab_root(unit), dest))
    return written


def add_arguments(parser) -> None:
    """``release nbgrader``'s variant flags: ``--secret`` and ``--roster``."""
    parser.add_argument(
        "--secret",
        metavar="FILE",
        help="the variant secret: autograde grades each notebook on its student's variant "
        "(default: the fixed set for everyone)",
    )
    parser.add_argument(
        "--roster",
        metavar="CSV",
        help="with --secret: also write release/students/<id>/ zips, each with the student's "
        "own public traces (docs/ta.md, Variants)",
    )


def checked_roster(args) -> tuple[list[str], bytes] | None:
    """The roster's ids and the secret, checked before the command writes anything; None
    without ``--roster``."""
    if args.roster is None:
        return None
    if args.secret is None or args.no_generate:
        raise UnitError("--roster needs --secret and the generated assignment (no --no-generate)")
    return read_roster(Path(args.roster)), load_secret(args.secret)


def from_roster(unit: Unit, course: Path, roster: tuple[list[str], bytes] | None) -> None:
    """The command's per-student zips (none without ``--roster``), each path printed."""
    if roster is not None:
        for path in release_students(unit, course.resolve(), *roster):
            print(f"wrote {path}")
