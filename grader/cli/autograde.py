"""``infralab autograde``: nbgrader's autograde of a unit, with the course's guarantees checked.

The documented way to autograde. Before nbgrader starts, every submitted folder is made of
plain files (``grader.course.nbsubmitted``: links, devices, FIFOs and sockets replaced by a
note); then ``nbgrader autograde`` runs in the course directory, and its log must show that
the course's managed config was loaded (the same check runs inside it, with the sandboxed
kernel and the trusted scores). A log without that line is an error: the config did not load,
and nbgrader graded with its own defaults.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..units import UnitError, load_unit


def _autograde(args, extra: list[str]) -> int:
    from ..course import nbgrader_course, nbsubmitted
    from .common import with_extra

    with_extra("nbgrader", "nbgrader")  # it runs in a child: say now if it is missing
    unit = load_unit(args.unit)
    course = Path(args.course).resolve()
    if not (course / nbgrader_course.CONFIG).is_file():
        raise UnitError(
            f"--course {course}: no {nbgrader_course.CONFIG} there; set the course up with "
            f"infralab release nbgrader --unit {unit.id} --course {args.course}"
        )
    try:
        replaced = nbsubmitted.make_plain(course / "submitted")
    except nbsubmitted.SubmissionError as exc:
        raise UnitError(str(exc)) from None
    for item in replaced:
        print(f"replaced {item.path.relative_to(course)} ({item.kind}) by a note")
    command = ["autograde", unit.id]
    if args.student:
        command += ["--student", args.student]
    if args.force:
        command.append("--force")
    done = nbgrader_course.nbgrader(course, *command, timeout=None)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    if nbsubmitted.HOOK_LINE not in done.stdout + done.stderr:
        raise UnitError(
            f"nbgrader did not load {nbgrader_course.MANAGED_CONFIG} (its log lacks "
            f"{nbsubmitted.HOOK_LINE!r}): the grades it wrote are not the course's; fix "
            "nbgrader_config.py and autograde again with --force"
        )
    return done.returncode


def add_autograde(commands) -> None:
    text = (
        "autograde a unit's nbgrader submissions: plain files only, sandboxed kernel, "
        "trusted scores (runs nbgrader autograde in the course directory)"
    )
    parser = commands.add_parser("autograde", help=text, description=text)
    parser.add_argument("--unit", required=True)
    parser.add_argument("--course", required=True, metavar="DIR", help="course directory")
    parser.add_argument("--student", metavar="ID", help="one student only (nbgrader's --student)")
    parser.add_argument(
        "--force", action="store_true", help="grade again what is already autograded"
    )
    parser.set_defaults(handler=_autograde)
