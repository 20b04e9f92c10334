"""The reference's verdicts remembered for a batch (``verdict_memo`` keeps them; see there why
a remembered verdict is the one judging would give).

    with remembered(unit, cases):      # the batch's parent, before its workers fork
        ...                            # judge_cases finds a remembered verdict by ``lookup``

This module sits above grading and judging (it runs the reference and judges its run files);
``judging`` itself only reads the memo.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..cases import case_trace_doc
from ..units import Unit
from . import verdict_memo
from .case_runs import run_with
from .grade import _inputs
from .inprocess import run_in_process
from .judging import JudgeJob, judge_cases
from .limits import limits_for
from .submission import Submission


@contextlib.contextmanager
def remembered(unit: Unit, cases: list[str] | None = None) -> Iterator[None]:
    """The reference's verdict of every case (all, or the ids in ``cases``) remembered while
    the block runs; forgotten after it. Raises ``GradingError`` as grading would."""
    have_reference = all((unit.solutions_dir / name).is_file() for name in unit.editable)
    if not (
        verdict_memo.ENABLED and have_reference
    ):  # a course bundle has none: every run file is judged
        yield
        return
    jobs = reference_jobs(unit, cases)
    for job, judged in zip(jobs, judge_cases(unit, jobs), strict=True):
        verdict_memo.remember(unit, job, judged.verdict, judged.cpu_s)
    try:
        yield
    finally:
        verdict_memo.forget()


def reference_jobs(unit: Unit, cases: list[str] | None) -> list:
    """A ``judging.JudgeJob`` per case for the reference solution's run, made in this process."""
    files = {name: (unit.solutions_dir / name).read_bytes() for name in unit.editable}
    unit, selected, goldens, reference = _inputs(unit, cases, Submission(files))
    children = run_with(
        run_in_process, unit, selected, reference.files, limits_for(unit), goldens, 1
    )
    return [JudgeJob(c, case_trace_doc(unit, c), goldens[c.id], children[c.id]) for c in selected]
