"""A variant's reference verdicts: judged once when the variant is made, kept in its folder.

    judge_reference(variant)   # when the variant is made: writes reference-verdicts.pickle
    fixed_entries(fixed, ids, path)  # the fixed set's, for cases a variant did not redraw
    recall(variant) -> bool    # a batch's worker, before it grades: remembers them

On the fixed set a batch judges the reference's run of every case once and gives that verdict
to every submission whose run file is byte for byte the reference's (``verdict_memo``,
``reference_memo``). In a class with variants every submission has its own reference run, so
the verdicts are judged when the variant is made (off the grading path) and kept in the
variant's private folder with the grader version that judged them; a batch recalls them
(``verdict_memo.keep``) only when that version is today's. Lookups still check the case, the
run file's SHA-256 and the very trace and golden documents, as for the fixed set.
"""

from __future__ import annotations

import base64
import hashlib
import pickle
from pathlib import Path

from ..cases import case_trace_doc, load_grading
from ..course.golden import load_golden
from ..grading import verdict_memo
from ..grading.fingerprint import grader_version
from ..grading.judging import judge_cases
from ..grading.reference_memo import reference_jobs
from ..jsonio import write_text_atomic
from ..units import Unit

FILE = "reference-verdicts.pickle"


def judge_reference(variant, same: dict[str, tuple] | None = None) -> None:
    """Judge the reference's run of every case of ``variant`` and keep the verdicts; ``same``:
    the kept entries of cases whose run file, trace and golden are the fixed set's
    (``fixed_entries``), taken as they are."""
    same = same or {}
    rest = [case.id for case in load_grading(variant).cases if case.id not in same]
    entries = list(same.values()) + (judged_entries(variant, rest) if rest else [])
    doc = {"grader": grader_version(), "entries": entries}
    (variant.variant_dir / FILE).write_bytes(pickle.dumps(doc))


def judged_entries(unit: Unit, cases: list[str]) -> list[tuple]:
    """(case id, run file SHA-256, verdict, CPU s) of the reference's run of each case judged
    now, for those a verdict may be kept of (``verdict_memo.rememberable``)."""
    jobs = reference_jobs(unit, cases)
    entries = []
    for job, judged in zip(jobs, judge_cases(unit, jobs), strict=True):
        if verdict_memo.rememberable(job.child, judged.verdict):
            digest = hashlib.sha256(job.child.output).hexdigest()
            entries.append((job.case.id, digest, judged.verdict, judged.cpu_s))
    return entries


def fixed_entries(fixed: Unit, cases: list[str], path: Path) -> dict[str, tuple]:
    """Case id -> the fixed set's kept entry, for each of ``cases`` that has one: judged once
    into ``path`` (private: the cache's, named by every input, ``store``) and read after."""
    try:
        doc = pickle.loads(base64.b64decode(path.read_text(encoding="ascii")))
    except (OSError, ValueError, pickle.UnpicklingError):
        doc = None
    if doc is None or doc.get("grader") != grader_version() or set(cases) - set(doc["asked"]):
        doc = {"grader": grader_version(), "asked": cases, "entries": judged_entries(fixed, cases)}
        write_text_atomic(path, base64.b64encode(pickle.dumps(doc)).decode(), mode=0o600)
    wanted = set(cases)
    return {entry[0]: entry for entry in doc["entries"] if entry[0] in wanted}


def recall(variant: Unit) -> bool:
    """Remember ``variant``'s kept verdicts for this process (and any it forks); False
    when there are none or another grader version judged them."""
    path = variant.variant_dir / FILE
    if not path.is_file():
        return False
    doc = pickle.loads(path.read_bytes())  # the variant's private folder: staff-written
    if doc.get("grader") != grader_version():
        return False
    grading = load_grading(variant)
    for case_id, digest, verdict, cpu_s in doc["entries"]:
        case = grading.by_id(case_id)
        trace_doc, golden = case_trace_doc(variant, case), load_golden(variant, case)
        verdict_memo.keep(variant, case, digest, trace_doc, golden, verdict, cpu_s)
    return True
