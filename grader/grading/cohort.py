"""Grade a whole class: many submissions in parallel, one JSON report each, one CSV of scores.

    grade_batch(unit, submissions, out, jobs=None, force=False, limits=None) -> BatchResult

Layout of ``out`` (0700; every file in it 0600): ``reports/<name>.json`` (the student view: no
hidden case ids, no staff detail), ``staff/<name>.json`` (the staff view) and ``scores.csv``
(rewritten atomically after every finished submission, rows sorted by name). Reports are
written atomically by the worker that graded them, the moment they are done.

A report records the fingerprint of its inputs (``fingerprint``: unit config, golden files,
hidden traces, lab folder, grader version, cases, limits) and the submission's hash; a rerun
skips a submission only when its report has both unchanged, so adding a case or fixing a
golden file regrades everything. Killing the run (SIGINT) loses only the submissions being
graded at that moment, and a rerun produces the same CSV as an uninterrupted run. Each
submission is graded in a worker process of its own: a worker that dies (killed for memory, a
signal) leaves an error row for that submission, never a batch that waits forever.

A submission that cannot be graded (no policies.py, a broken zip) gets a report with its
one-line error and score 0. A failure of the grader's environment (sandbox refused or broken,
an unexpected error) is an error row with no score, retried on the next run; it never stops
the batch. The summary counts the error rows.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..cases import load_grading
from ..jsonio import write_text_atomic
from ..sandbox import Limits, SandboxError, require_safe_isolation
from ..units import Unit, UnitError, load_unit
from . import verdict_memo
from .cohort_csv import csv_text
from .cohort_reports import (
    PRIVATE_DIR,
    PRIVATE_FILE,
    REPORTS,
    STAFF,
    is_finished,
    read_report,
    report_path,
)
from .cohort_workers import run_workers
from .errors import GradingError
from .fingerprint import grader_version, inputs_fingerprint, submission_hash
from .grade import warm
from .limits import hidden_material
from .reference_memo import remembered
from .submission import submission_name

CSV_NAME = "scores.csv"


class BatchError(Exception):
    """The batch cannot start (bad arguments, duplicate names, unsafe sandbox); nothing was
    graded."""


@dataclass
class BatchResult:
    graded: list[str] = field(default_factory=list)  # graded in this run
    skipped: list[str] = field(default_factory=list)  # finished in an earlier run, same inputs
    failed: list[str] = field(default_factory=list)  # the grader's environment failed (retried)
    errors: list[str] = field(default_factory=list)  # rows of the CSV with an error
    max_scores: list[float] = field(default_factory=list)  # distinct maxScore values in the CSV
    interrupted: bool = False
    csv_path: Path | None = None


def grade_batch(
    unit: Unit | str,
    submissions: list[Path],
    out: Path,
    *,
    jobs: int | None = None,
    force: bool = False,
    limits: Limits | None = None,
    cases: list[str] | None = None,
    progress: bool = True,
    on_done: Callable[[str], None] | None = None,
    variant_of: Callable[[str], Unit] | None = None,
) -> BatchResult:
    """Grade ``submissions`` into ``out`` (see the module docstring). ``variant_of``: the unit
    each submission is graded on, by its name (a student's variant, ``grader.variants``)."""
    unit = load_unit(unit) if isinstance(unit, str) else unit
    grading = load_grading(unit)  # a broken unit stops here, before anything is written
    for case_id in cases or []:
        grading.by_id(case_id)
    names = _names(submissions)
    units = {name: variant_of(name) if variant_of else unit for name in names}
    out = _private_out(Path(out), unit)
    distinct = list({id(u): u for u in units.values()}.values())  # Units do not hash
    inputs = {id(u): inputs_fingerprint(u, cases, limits) for u in distinct}
    version = grader_version()
    result = BatchResult(csv_path=out / CSV_NAME)
    todo = []
    for name, path in names.items():
        fingerprint = {"inputs": inputs[id(units[name])], "grader": version}
        fingerprint["submission"] = submission_hash(path)
        if not force and is_finished(read_report(report_path(out, name)), fingerprint):
            result.skipped.append(name)
        else:
            own = variant_of is not None  # warmed by its own worker, in parallel
            todo.append(
                (units[name], name, str(path.resolve()), str(out), limits, cases, fingerprint, own)
            )
    parts = list(grading.parts)
    try:  # every worker is forked from here and finds it all made; a variant's worker makes
        for each in distinct if variant_of is None else [unit]:  # its own (one each, at once)
            warm(each, cases)
    except GradingError as exc:
        raise BatchError(str(exc)) from None

    def write_csv() -> None:
        text = csv_text(parts, list(names), lambda n: read_report(report_path(out, n)))
        write_text_atomic(out / CSV_NAME, text, mode=PRIVATE_FILE)

    shared = len(todo) > 1 and variant_of is None  # the reference's verdicts serve them all
    try:
        with remembered(unit, cases) if shared else contextlib.nullcontext():
            run_workers(
                todo, jobs or default_jobs(), len(names), progress, result, write_csv, on_done
            )
    finally:
        verdict_memo.forget()
    _count_rows(result, out, list(names))
    return result


def _names(submissions: list[Path]) -> dict[str, Path]:
    names: dict[str, Path] = {}
    for given in submissions:
        path = Path(given)
        if not path.exists():
            raise BatchError(f"submission {path}: no such file or folder")
        name = submission_name(path)
        if name in names:
            raise BatchError(f"two submissions are both named '{name}': {names[name]} and {path}")
        names[name] = path
    return names


def _private_out(out: Path, unit: Unit) -> Path:
    """``out`` with its report folders, all 0700, once the sandbox is known to keep the
    hidden material and the reports out of every child's reach."""
    if out.exists() and not out.is_dir():
        raise BatchError(f"--out {out}: exists and is not a folder")
    hidden = hidden_material(unit)  # a variant's lie in the variant cache, private too
    out.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    os.chmod(out, PRIVATE_DIR)
    try:
        require_safe_isolation([*hidden, out], batch=True)
    except SandboxError as exc:
        raise BatchError(str(exc)) from None
    for sub in (REPORTS, STAFF):
        (out / sub).mkdir(exist_ok=True, mode=PRIVATE_DIR)
        os.chmod(out / sub, PRIVATE_DIR)
    return out


def default_jobs() -> int:
    """One worker per core, and one more: each worker waits on its sandboxed child and on its
    judging child for part of the time, and the extra worker keeps the cores busy meanwhile
    (on 2 cores, 176 unit 07 submissions a minute instead of 157)."""
    return (os.cpu_count() or 1) + 1


def _count_rows(result: BatchResult, out: Path, names: list[str]) -> None:
    """Error rows and the distinct maximum scores over every report of the batch."""
    most = set()
    for name in names:
        doc = read_report(report_path(out, name))
        if doc is None:
            continue
        if doc.get("error"):
            result.errors.append(name)
        elif doc.get("maxScore") is not None:
            most.add(float(doc["maxScore"]))
    result.max_scores = sorted(most)


def _variant_of(args) -> Callable[[str], Unit] | None:
    """``--variants-by-name``: each submission is graded on the variant of the student its
    name (folder name, zip stem) is."""
    if not args.variants_by_name:
        return None
    from ..variants import identity, keys

    unit, secret = load_unit(args.unit), keys.load_secret(args.secret)
    return lambda name: identity.variant_for(unit, name, secret)


def run_cli(args) -> int:
    """``infralab grade --unit U SUB... --out DIR [--jobs N] [--force]``."""
    if args.json or args.gradescope:
        raise UnitError("--json and --gradescope grade one submission; with many, use --out")
    if not args.out:
        raise UnitError("grading several submissions needs --out DIR (reports and scores.csv)")
    from .limits import limits_for

    limits = None
    if args.timeout or args.all_cases:
        limits = limits_for(args.unit, args.timeout, args.all_cases)
    try:
        result = grade_batch(
            args.unit,
            [Path(p) for p in args.submission],
            Path(args.out),
            jobs=args.jobs,
            force=args.force,
            limits=limits,
            cases=args.case or None,
            variant_of=_variant_of(args),
        )
    except BatchError as exc:
        raise UnitError(str(exc)) from None
    print(
        f"graded {len(result.graded)}, skipped {len(result.skipped)} (already done, same "
        f"inputs), errors {len(result.errors)} (of which {len(result.failed)} the grader's, "
        f"retried on the next run); scores in {result.csv_path}"
    )
    if len(result.max_scores) > 1:
        shown = ", ".join(f"{m:g}" for m in result.max_scores)
        print(
            f"warning: the CSV mixes maximum scores ({shown}); rerun with --force", file=sys.stderr
        )
    if result.interrupted:
        print("interrupted: finished reports are kept; rerun to grade the rest", file=sys.stderr)
        return 130
    return 1 if result.failed else 0
