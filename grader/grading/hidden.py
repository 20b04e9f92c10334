"""Hidden-case feedback from a closed vocabulary: the one function that builds it.

    hidden_feedback(status, note, subject, remarks=()) -> str

A hidden case's feedback is a function of the grader's own data only: the case's ``Status``,
one ``Note`` (a fixed phrase of this module) or ``Diagnosis`` (a text of the unit's catalogue,
or one of ``grader.diagnosis``'s fixed phrases), the function under test as the unit names it
(``diagnosis.subject``) and ``Remark`` members the grader adds from other verdicts. No
argument can hold a byte the child produced: stdout, stderr, tracebacks, exception types and
messages, exit codes, run-file contents, sizes and times never reach this function, so no path
that builds a hidden case's feedback through it can show them. A submission can at most choose
which of these fixed texts it earns (a few bits per case, as the status already allows).

Every student surface of a hidden case (CLI text, JSON, Gradescope, batch reports, nbgrader)
takes ``CaseResult.feedback``, which ``grade`` builds here; a public case's feedback is built
with the same wording plus what only a public case may show (``Verdict.visible_text``).
"""

from __future__ import annotations

from enum import Enum

from ..diagnosis import Diagnosis
from .report import Status


class Note(Enum):
    """What the grader says about a case besides its status: its own words, never the child's."""

    NONE = ""
    TIME_LIMIT = "the run did not finish within its time limit"
    SKIPPED_POLICY = "not run: this policy ran out of time on an earlier case (a time limit)"
    SKIPPED_DEADLINE = "not run: the submission's time limit was used up"
    MEMORY_LIMIT = "the run was stopped by the sandbox: memory limit exceeded"
    FILE_LIMIT = "the run was stopped by the sandbox: file size limit exceeded"
    CPU_OR_MEMORY_LIMIT = "the run was stopped by the sandbox: CPU time or memory limit exceeded"
    SANDBOX_LIMIT = "the run was stopped by the sandbox: a limit was exceeded"
    EXCEPTION = "an exception was raised in the run"
    ENGINE_REJECTED = "the engine rejected a batch the policy returned"
    NOT_IMPLEMENTED = "it or a function it calls is not implemented yet"
    MISSING_FUNCTION = (
        "policies.py defines no function that this case calls (is the file empty or incomplete?)"
    )
    NO_RUN_FILE = "simulate.py exited without writing its run file"
    NO_ANSWERS = "the script exited without writing its answers"
    RUN_FILE_TOO_LARGE = "run file rejected: larger than the cap for this trace"
    RUN_FILE_NOT_PLAIN = "run file rejected: not a regular file with one link"
    RUN_FILE_REJECTED = "run file rejected"
    NOT_JSON = "the run file was rejected: it is not valid JSON"
    NUMBER_TOO_LARGE = "the run file was rejected: a number in it is too large"
    NOT_ONE_RUN = "the run file does not hold exactly one run"
    OTHER_TRACE = "the run file's trace is not the case's trace"
    OVERSIZE = "the run file declares more work than its trace allows"
    SCHEMA = "the run file does not match the schema"
    OTHER_RUN = "the run file is for another policy or other parameters"
    OTHER_DEVICE = "the run file's device profile is not the case's"
    OTHER_LIMITS = "the run file's limits (token budget, queue cap) are not the case's"
    DEVICE_RULE = "the timeline breaks a device rule"
    STATS_DISAGREE = "reported statistics disagree with the timeline"
    FAULT_SWITCH = "the run file was made with a fault switch on"
    UNCHECKABLE = "the run file holds values the grader cannot check"
    CHECK_TIME = "checking the run file went past the grader's CPU time limit"
    CHECK_MEMORY = "checking the run file went past the grader's memory or time limit"
    NOT_CHECKED = "not checked: this submission's run files used up the grader's checking time"
    COMPILE_TIME = "a file this case uses did not compile within the compile budget"
    CONSTANT_ANSWERS = (
        "across the runs it is graded on, its answers match the reference's no more often than "
        "one fixed answer would, and an answer that does not depend on the run earns nothing"
    )


class Remark(Enum):
    """A line the grader adds to a case's feedback from its own view of other cases."""

    KEYED = (
        "the same policy passes on the trace this case was derived from (only request ids and "
        "arrival times differ), so the policy seems to depend on ids or absolute times"
    )


UNNAMED = (Status.PASSED, Status.BELOW_REFERENCE)  # no function named: nothing failed


def phrase(note: Note | Diagnosis, subject: str) -> str:
    """The note in words, naming ``subject`` (a diagnosis names its own subject)."""
    if isinstance(note, Diagnosis):
        return note.text()
    if not isinstance(note, Note):
        raise TypeError(f"a hidden case's note must be a Note or a Diagnosis, not {note!r}")
    if note.value and subject:
        return f"{subject}: {note.value}"
    return note.value or subject


def line(status: Status, text: str) -> str:
    """``<status words>: <text>``, or the words alone."""
    return f"{status.words}: {text}" if text else status.words


def hidden_feedback(
    status: Status, note: Note | Diagnosis, subject: str, remarks: tuple[Remark, ...] = ()
) -> str:
    """The feedback of a hidden case: built from the grader's own data only (see the module)."""
    if not isinstance(status, Status) or not all(isinstance(r, Remark) for r in remarks):
        raise TypeError("a hidden case's feedback takes a Status and Remark members only")
    text = phrase(note, subject)  # raises TypeError for anything but a Note or a Diagnosis
    if status in UNNAMED:
        text = ""
    return "\n".join([line(status, text), *(r.value for r in remarks)])
