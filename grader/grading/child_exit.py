"""The verdict on a child that left no run file to check: skipped, out of time, stopped by a
limit, a file too slow to compile, a missing or unfinished function, a crash.

    how_it_ended(unit, case, child) -> Verdict | None   # None: there is a run file to check

A hidden case's note is one of the grader's fixed notes: nothing the child wrote reaches it.
Visible cases add the student's own traceback (``student_traceback``).
"""

from __future__ import annotations

import re

from .. import diagnosis
from ..cases import Case, Kind
from ..diagnosis import Diagnosis
from ..sandbox import ChildResult
from ..units import Unit
from .hidden import Note
from .report import Status
from .verdict import Verdict, safely

NOT_IMPLEMENTED = re.compile(r"is not implemented yet|NotImplementedError")
COMPILE_BUDGET = re.compile(
    r"CompileBudgetError: (\w{1,64}\.py) did not compile within the ([0-9.]{1,12}) s compile"
)
MISSING_POLICY = re.compile(r"AttributeError: module 'policies' has no attribute '(\w{1,64})'")


def how_it_ended(unit: Unit, case: Case, child: ChildResult) -> Verdict | None:
    """The verdict when the child did not leave a run file to check (None when it did)."""
    if child.skipped:
        return Verdict(Status.TIMEOUT, _skip_note(child.skipped), public=child.summary)
    if child.out_of_time:
        limit = child.limit or "wall time"
        public = f"the run did not finish within the {limit} limit"
        return Verdict(Status.TIMEOUT, Note.TIME_LIMIT, public=public)
    if child.limit:  # memory, file size: stopped by the sandbox
        note = LIMIT_NOTES.get(child.limit, Note.SANDBOX_LIMIT)
        return Verdict(Status.CRASH, note, public=f"the run was {child.summary}")
    if child.output_error:
        note = OUTPUT_NOTES.get(child.output_error, Note.RUN_FILE_REJECTED)
        return Verdict(Status.INVALID_SCHEDULE, note, public=child.summary)
    if child.returncode != 0:
        stderr = child.stderr or ""
        too_slow = COMPILE_BUDGET.search(stderr)
        if too_slow:
            return _too_slow_to_compile(unit, case, too_slow)
        missing = MISSING_POLICY.search(stderr)
        if missing:
            public = (
                f"policies.py defines no function {missing.group(1)}() "
                "(is the file empty or incomplete?)"
            )
            return Verdict(Status.NOT_IMPLEMENTED, Note.MISSING_FUNCTION, public=public)
        if NOT_IMPLEMENTED.search(stderr):
            who = diagnosis.subject(unit, case)
            public = f"{who} (or a function it calls) is not implemented yet"
            return Verdict(Status.NOT_IMPLEMENTED, Note.NOT_IMPLEMENTED, public=public)
        detail = f"exit code {child.returncode}\n{student_traceback(stderr)}"
        refused = safely(lambda: diagnosis.diagnose_rejection(unit, case, stderr), None)
        if refused is not None:
            return Verdict(Status.CRASH, refused, detail=f"{refused.staff()}\n{detail}")
        return Verdict(Status.CRASH, _crash_note(child), detail=detail)
    if child.output is None:
        if case.kind is Kind.SCRIPT:
            public = f"{case.script} exited without writing its answers"
            return Verdict(Status.CRASH, Note.NO_ANSWERS, public=public)
        return Verdict(Status.CRASH, Note.NO_RUN_FILE)
    return None


def _too_slow_to_compile(unit: Unit, case: Case, found: re.Match) -> Verdict:
    """A file the case imports did not compile within the compile budget: named when it is
    one of the unit's editable files (the grader's own list), else by the generic note."""
    name, budget = found.group(1), found.group(2)
    if name not in unit.editable:
        return Verdict(Status.TIMEOUT, Note.COMPILE_TIME)
    text = f"{name} did not compile within the compile budget"
    note = Diagnosis(diagnosis.subject(unit, case), text)
    public = f"{name} did not compile within the {budget} s compile budget"
    return Verdict(Status.TIMEOUT, note, public=public)


LIMIT_NOTES = {  # ``ChildResult.limit`` values (``sandbox.results.which_limit``)
    "memory": Note.MEMORY_LIMIT,
    "file size": Note.FILE_LIMIT,
    "CPU time or memory": Note.CPU_OR_MEMORY_LIMIT,
}
OUTPUT_NOTES = {
    "larger than the cap for this trace": Note.RUN_FILE_TOO_LARGE,
    "not a regular file with one link": Note.RUN_FILE_NOT_PLAIN,
}


def _skip_note(why: str) -> Note:
    """A case that was not run: the grader's own reason, as one of its notes."""
    from ..sandbox.multicase import SKIPPED_DEADLINE

    return Note.SKIPPED_DEADLINE if why.startswith(SKIPPED_DEADLINE) else Note.SKIPPED_POLICY


_LAB_PATH = re.compile(r'File "[^"]*?/([^/"]+\.py)"')


def student_traceback(stderr: str, limit: int = 20) -> str:
    """The part of a child's stderr a student needs: their own frames and the error line.

    Temp-folder paths are shortened to the file name; frames inside the engine before the
    first frame of an editable file are dropped.
    """
    lines = _LAB_PATH.sub(r'File "\1"', stderr.strip()).splitlines()
    starts = [n for n, line in enumerate(lines) if line.startswith("Traceback")]
    if not starts:
        return "\n".join(lines[-limit:])
    block = lines[starts[-1] :]
    own = next((n for n, line in enumerate(block) if 'File "policies.py"' in line), 1)
    kept = [block[0], *block[max(own, 1) :]]
    return "\n".join(kept[-limit:])


def _crash_note(child: ChildResult) -> Note:
    """What stopped the child, as one of two fixed notes.

    Deliberately coarse: the exception's type or message would be a channel through which a
    submission could smuggle details of a hidden trace out. Visible cases add the traceback.
    """
    if "simulate.py: error:" in (child.stderr or ""):
        return Note.ENGINE_REJECTED
    return Note.EXCEPTION
