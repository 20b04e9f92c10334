"""The class roster: a CSV with an ``id`` column, one student a row, checked as a whole.

The id is what the grader finds in a submission: Gradescope's ``sid`` (or the email where a
student has no SID), nbgrader's student id, or ``--student``. Each id names the student's
folder of a release, so it must be safe as a file name everywhere: a letter or digit, then
letters, digits, ``.``, ``_``, ``-``, ``+`` or ``@``, at most 100 characters. Two ids that differ
only in case are duplicates (they would share a folder on macOS and Windows).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from ..units import UnitError

ID_COLUMN = "id"
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+@-]{0,99}")


class RosterError(UnitError):
    """A roster (or a student id) that cannot be used; the message names the row."""


def check_id(student_id: str, where: str = "student id") -> str:
    """``student_id`` when it is safe as a folder name, else ``RosterError``."""
    if not SAFE_ID.fullmatch(student_id) or student_id.endswith("."):
        raise RosterError(
            f"{where}: {student_id!r} is not a safe id (a letter or digit, then letters, digits, "
            "'.', '_', '-', '+' or '@', at most 100 characters, not ending in '.')"
        )
    return student_id


def read_roster(path: Path) -> list[str]:
    """The roster's ids in file order; one ``RosterError`` for the first problem found."""
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.DictReader(handle))
            header = (rows and list(rows[0])) or _header(path)
    except FileNotFoundError:
        raise RosterError(f"roster {path}: no such file") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise RosterError(f"roster {path}: cannot read it as UTF-8 CSV ({exc})") from None
    if ID_COLUMN not in [str(name).strip() for name in header if name is not None]:
        raise RosterError(f"roster {path}: no '{ID_COLUMN}' column (found: {header or 'none'})")
    ids, seen = [], {}
    for line, row in enumerate(rows, start=2):
        value = next((v for k, v in row.items() if k is not None and k.strip() == ID_COLUMN), "")
        student = (value or "").strip()
        where = f"roster {path}, line {line}"
        if not student:
            raise RosterError(f"{where}: the '{ID_COLUMN}' is empty")
        check_id(student, where)
        if student.lower() in seen:
            raise RosterError(
                f"{where}: id {student!r} repeats line {seen[student.lower()]} (ids are compared "
                "without case)"
            )
        seen[student.lower()] = line
        ids.append(student)
    if not ids:
        raise RosterError(f"roster {path}: no students")
    return ids


def _header(path: Path) -> list[str]:
    with open(path, newline="", encoding="utf-8-sig") as handle:
        return next(csv.reader(handle), [])
