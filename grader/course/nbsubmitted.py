"""Only plain files of a submission reach nbgrader.

nbgrader's first autograde step copies ``submitted/<student>/<assignment>/`` into
``autograded/`` as the grading user, following links, and ``generate_feedback`` copies what is
there into the student's ``feedback/``. A submitted symbolic link (or a hard link to a file
elsewhere) would thus be graded, and handed back, as the file it points at: the reference
solution, a hidden trace, the source notebook, the gradebook. A FIFO or a device would hang or
flood the copy.

``make_plain(folder)`` replaces each such entry below ``folder`` by a one-line note (a Python
comment, so a replaced ``policies.py`` is a valid module that implements nothing) and returns
what it replaced. It never follows a link and never opens an entry it replaces. ``install()``
runs it on the whole ``submitted`` folder at the start of every nbgrader autograde (the
command, and the Formgrader's button), before nbgrader reads, copies or runs anything there;
the course's managed config calls it. ``infralab autograde`` runs it too, then nbgrader.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

NOTE = (
    "# infralab: {name} was {kind} in the submission and was replaced by this note before "
    "grading; only plain files are graded.\n"
)
HOOK_LINE = "infralab: submitted folders checked: only plain files remain"


class SubmissionError(RuntimeError):
    """A submitted folder that cannot be made plain; the message names it."""


@dataclass(frozen=True)
class Replaced:
    path: Path
    kind: str  # "a symbolic link", "a hard link", ...


def unplain_kind(st: os.stat_result) -> str | None:
    """What makes this entry (``lstat``'s answer) something other than a plain file or folder;
    None for a plain one. A regular file with more than one name is a hard link: its other
    name may lie outside the folder."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        return None
    if stat.S_ISREG(mode):
        return "a hard link" if st.st_nlink > 1 else None
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def _replace(path: Path, kind: str) -> None:
    """Put the note in ``path``'s place in one rename (which never follows a link)."""
    fd, tmp = tempfile.mkstemp(prefix=".infralab-note-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(NOTE.format(name=path.name, kind=kind))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def make_plain(folder: Path) -> list[Replaced]:
    """Replace every entry below ``folder`` that is not a plain file or folder by a note.

    ``folder`` itself must be a real folder (not a link to one). Raises ``SubmissionError``
    when it is not, or when an entry cannot be replaced.
    """
    folder = Path(folder)
    try:
        top = folder.lstat()
    except FileNotFoundError:
        return []
    if not stat.S_ISDIR(top.st_mode):
        raise SubmissionError(f"{folder} is {unplain_kind(top) or 'not a folder'}, not a folder")
    replaced: list[Replaced] = []
    pending = [folder]
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as entries:
                found = [(Path(e.path), e.stat(follow_symlinks=False)) for e in entries]
        except OSError as exc:
            raise SubmissionError(f"{current}: cannot be read ({exc.strerror})") from None
        for path, st in sorted(found):
            kind = unplain_kind(st)
            if kind is None:
                if stat.S_ISDIR(st.st_mode):
                    pending.append(path)
                continue
            try:
                _replace(path, kind)
            except OSError as exc:
                raise SubmissionError(f"{path} is {kind} and cannot be replaced: {exc}") from None
            replaced.append(Replaced(path, kind))
    return replaced


def submitted_root(coursedir) -> Path:
    """nbgrader's ``submitted`` folder of ``coursedir`` (a ``CourseDirectory``); refuses a
    ``directory_structure`` whose submitted step is not one folder under the course root."""
    default = os.path.join("{nbgrader_step}", "{student_id}", "{assignment_id}")
    if coursedir.directory_structure != default:
        raise SubmissionError(
            f"CourseDirectory.directory_structure {coursedir.directory_structure!r}: infralab "
            f"checks submissions only under the default {default!r}"
        )
    return Path(coursedir.root) / coursedir.submitted_directory


def install() -> None:
    """Make nbgrader's autograde start by ``make_plain`` on the whole ``submitted`` folder.

    nbgrader builds its ``Autograde`` converter in two places (the command and the
    Formgrader's API) and neither takes a class from the config, so the converter's first
    step, ``init_notebooks``, is wrapped on the class itself. A folder that cannot be made
    plain stops the autograde before anything is copied.
    """
    from nbgrader.converters.autograde import Autograde
    from nbgrader.converters.base import NbGraderException

    original = Autograde.init_notebooks
    if getattr(original, "infralab_plain", False):
        return

    def init_notebooks(self) -> None:
        try:
            replaced = make_plain(submitted_root(self.coursedir))
        except SubmissionError as exc:
            self.log.error("infralab: %s", exc)
            raise NbGraderException(str(exc)) from None
        for item in replaced:
            self.log.warning("infralab: %s was %s; replaced by a note", item.path, item.kind)
        self.log.info(HOOK_LINE)
        original(self)

    init_notebooks.infralab_plain = True
    Autograde.init_notebooks = init_notebooks
