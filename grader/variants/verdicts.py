"""A variant's reference verdicts: judged once when the variant is made, kept in its folder.

    judge_reference(variant)   # when the variant is made: writes reference-verdicts.pickle
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

import hashlib
import pickle

from ..cases import case_trace_doc, load_grading
from ..course.golden import load_golden
from ..grading import verdict_memo
from ..grading.fingerprint import grader_version
from ..grading.judging import judge_cases
from ..grading.reference_memo import reference_jobs
from ..units import Unit

FILE = "reference-verdicts.pickle"


def judge_reference(variant) -> None:
    """Judge the reference's run of every case of ``variant`` and keep the verdicts."""
    jobs = reference_jobs(variant, None)
    entries = []
    for job, judged in zip(jobs, judge_cases(variant, jobs), strict=True):
        if verdict_memo.rememberable(job.child, judged.verdict):
            digest = hashlib.sha256(job.child.output).hexdigest()
            entries.append((job.case.id, digest, judged.verdict, judged.cpu_s))
    doc = {"grader": grader_version(), "entries": entries}
    (variant.variant_dir / FILE).write_bytes(pickle.dumps(doc))


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
