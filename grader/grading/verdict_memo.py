"""Verdicts remembered by the run file they were decided from: the reference's run of a case is
judged once per batch, not once per submission that writes the same bytes.

    with remembered(unit, cases):      # reference_memo: the batch's parent, before it forks
        ...                            # judge_cases finds a remembered verdict by ``lookup``

When a case's child ended normally (exit 0, within every limit, a run file written),
``verdict.judge`` decides from the case, its trace and golden documents and the run file's bytes
alone. So ``remembered`` runs the unit's reference solution on every case in this process
(trusted staff code, ``inprocess.run_in_process``, which writes its run files as the sandboxed
child does), judges those run files as any submission's are (``judging.judge_cases``: the
judging child, its ceilings, the replay, the golden comparison) and keeps each verdict under
the case and the SHA-256 of the bytes judged. A submission whose child wrote exactly those
bytes for a case gets that verdict without a judging child: the same checks on the same input
have the same result. Anything else (another byte, another exit, a limit hit, another case,
trace or golden document) is judged as before. Only verdicts the checks reached are kept, never
one a judging ceiling decided. Outside ``remembered`` nothing is remembered.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from ..cases import Case
from ..sandbox import ChildResult
from ..units import Unit
from .hidden import Note

# Verdicts a judging ceiling decided: they say how the checking went this time, not what the
# run file is, so they are never remembered.
CEILING_NOTES = frozenset({Note.CHECK_TIME, Note.CHECK_MEMORY, Note.NOT_CHECKED})


@dataclass(frozen=True)
class _Entry:
    unit: Unit
    trace_doc: dict
    golden: dict
    verdict: object  # verdict.Verdict
    cpu_s: float  # what judging it took: charged again to the submission's judging time


_MEMO: dict[tuple[str, str], _Entry] = {}
ENABLED = True  # benchmarks/grade_unit08.py turns it off to measure grading without it


def _key(case: Case, child: ChildResult) -> tuple[str, str] | None:
    """(case, digest of its run file) for a child whose verdict depends on its run file alone;
    None for any other ending (those verdicts are cheap and read the child's other fields)."""
    ended_normally = (
        child.returncode == 0
        and child.output is not None
        and not (child.skipped or child.out_of_time or child.limit or child.output_error)
    )
    if not ended_normally:
        return None
    return repr(case), hashlib.sha256(child.output).hexdigest()


def lookup(unit: Unit, job) -> tuple[object, float] | None:
    """(a copy of the remembered verdict, its judging CPU seconds) for a ``judging.JudgeJob``
    whose run file was judged before with the same unit, case, trace and golden documents;
    None otherwise."""
    key = _key(job.case, job.child)
    entry = _MEMO.get(key) if key is not None else None
    if entry is None:
        return None
    same = _same_unit(entry.unit, unit)
    same = same and entry.trace_doc is job.trace_doc and entry.golden is job.golden
    return (_copy(entry.verdict), entry.cpu_s) if same else None


def _same_unit(kept: Unit, unit: Unit) -> bool:
    """The same unit: a batch's workers load it again from the same unit.yaml."""
    if kept is unit:
        return True
    same_place = (kept.id, kept.course_root, kept.unit_dir) == (
        unit.id,
        unit.course_root,
        unit.unit_dir,
    )
    return same_place and kept.doc == unit.doc


def remember(unit: Unit, job, verdict, cpu_s: float) -> None:
    """Keep the verdict a ``judging.JudgeJob`` got, unless a judging ceiling decided it."""
    if rememberable(job.child, verdict):
        _MEMO[_key(job.case, job.child)] = _Entry(
            unit, job.trace_doc, job.golden, _copy(verdict), cpu_s
        )


def rememberable(child: ChildResult, verdict) -> bool:
    """Whether a verdict may be kept: decided from the run file alone, not by a ceiling."""
    return _key(None, child) is not None and not any(verdict.note is n for n in CEILING_NOTES)


def keep(unit: Unit, case: Case, digest: str, trace_doc, golden, verdict, cpu_s: float) -> None:
    """Keep a verdict judged earlier (``grader.variants.verdicts``) under the case and the
    SHA-256 of its run file, as ``remember`` keeps one judged now."""
    _MEMO[(repr(case), digest)] = _Entry(unit, trace_doc, golden, _copy(verdict), cpu_s)


def _copy(verdict):
    return replace(verdict, metrics=dict(verdict.metrics))


def forget() -> None:
    """Forget every remembered verdict (the end of a ``reference_memo.remembered`` block)."""
    _MEMO.clear()
