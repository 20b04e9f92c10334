"""Grade a whole class: many submissions in parallel, one JSON report each, one CSV of scores.

    grade_batch(unit, submissions, out, jobs=None, force=False, limits=None) -> BatchResult

Layout of ``out``: ``reports/<name>.json`` (one per submission, written atomically by the
worker that graded it, the moment it is done) and ``scores.csv`` (rewritten atomically after
every finished submission, rows sorted by name). A submission whose report exists is finished:
a rerun skips it unless ``force``. Killing the run (SIGINT) therefore loses only the
submissions being graded at that moment, and a rerun produces the same CSV as an
uninterrupted run. A submission that cannot be graded (no policies.py, a broken zip) gets a
report with its one-line error and score 0; it never stops the batch.
"""

from __future__ import annotations

import csv
import io
import json
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .cases import load_grading
from .jsonio import write_json, write_text_atomic
from .sandbox import Limits
from .units import Unit, UnitError, load_unit

REPORTS = "reports"
CSV_NAME = "scores.csv"
REPORT_FORMAT = 1


class BatchError(Exception):
    """The batch cannot start (bad arguments, duplicate names); nothing was written."""


@dataclass
class BatchResult:
    graded: list[str] = field(default_factory=list)  # graded in this run
    skipped: list[str] = field(default_factory=list)  # finished in an earlier run
    failed: list[str] = field(default_factory=list)  # grading itself broke (no report)
    interrupted: bool = False
    csv_path: Path | None = None


def submission_name(path: Path) -> str:
    """The name a submission goes by in the CSV and the report file (folder name, zip stem)."""
    path = Path(path)
    name = path.stem if path.suffix.lower() == ".zip" else path.name
    return "".join(ch if ch.isalnum() or ch in "._-@+" else "_" for ch in name) or "_"


def report_path(out: Path, name: str) -> Path:
    return Path(out) / REPORTS / f"{name}.json"


def read_report(path: Path) -> dict | None:
    """A finished report, or None when it is missing or not one of ours (then: grade again)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("batchFormat") != REPORT_FORMAT:
        return None
    return doc


def _grade_one(task: tuple) -> tuple[str, str | None]:
    """Worker: grade one submission and write its report; (name, None) or (name, crash)."""
    unit_id, name, source, out, limits, cases = task
    from .grading import GradingError, grade_submission

    try:
        report = grade_submission(unit_id, Path(source), cases=cases, limits=limits, jobs=1)
        doc = report.to_json(staff=True)
        doc["error"] = None
    except GradingError as exc:  # the submission's fault: recorded, scored 0
        doc = {"unit": unit_id, "score": 0.0, "maxScore": None, "parts": {}, "error": str(exc)}
    except Exception as exc:  # the grader's fault: no report, so a rerun tries again
        return name, f"{type(exc).__name__}: {exc}"
    doc.update({"batchFormat": REPORT_FORMAT, "submission": name})
    # A SIGTERM from an interrupted batch waits until the report is whole (or never started),
    # so no temp file is left behind between the write and the rename.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        write_json(report_path(Path(out), name), doc)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return name, None


def _worker_init() -> None:
    # Ctrl-C goes to the whole process group: the parent decides, workers carry on until
    # terminated; SIGTERM unwinds (temp folders and sandbox children are cleaned up).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_on_term)


def _exit_on_term(signum, frame):
    raise SystemExit(128 + signum)


def csv_text(unit: Unit, names: list[str], out: Path) -> str:
    """The scores CSV: one row per finished submission, sorted by name; deterministic."""
    parts = list(load_grading(unit).parts)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["submission", "score", "max_score", *parts, "error"])
    for name in sorted(names):
        doc = read_report(report_path(out, name))
        if doc is None:
            continue
        row_parts = [_num(doc.get("parts", {}).get(p, {}).get("score", 0.0)) for p in parts]
        most = doc.get("maxScore")
        max_text = "" if most is None else _num(most)
        writer.writerow([name, _num(doc["score"]), max_text, *row_parts, doc.get("error") or ""])
    return buffer.getvalue()


def _num(value) -> str:
    return f"{float(value):g}"


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
) -> BatchResult:
    """Grade ``submissions`` into ``out`` (see the module docstring)."""
    unit = load_unit(unit) if isinstance(unit, str) else unit
    grading = load_grading(unit)  # a broken unit stops here, before anything is written
    for case_id in cases or []:
        grading.by_id(case_id)
    names: dict[str, Path] = {}
    for given in submissions:
        path = Path(given)
        if not path.exists():
            raise BatchError(f"submission {path}: no such file or folder")
        name = submission_name(path)
        if name in names:
            raise BatchError(f"two submissions are both named '{name}': {names[name]} and {path}")
        names[name] = path
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BatchError(f"--out {out}: exists and is not a folder")
    (out / REPORTS).mkdir(parents=True, exist_ok=True)
    result = BatchResult(csv_path=out / CSV_NAME)
    todo = []
    for name, path in names.items():
        if not force and read_report(report_path(out, name)) is not None:
            result.skipped.append(name)
        else:
            todo.append((unit.id, name, str(path.resolve()), str(out), limits, cases))

    def write_csv() -> None:
        write_text_atomic(out / CSV_NAME, csv_text(unit, list(names), out))

    workers = max(1, min(jobs or os.cpu_count() or 1, len(todo) or 1))
    pool = multiprocessing.get_context("fork").Pool(workers, initializer=_worker_init)
    bar = _progress(len(names), len(result.skipped), progress)  # after the fork: it has a thread
    try:
        for name, error in pool.imap_unordered(_grade_one, todo):
            if error:
                result.failed.append(name)
                print(f"infralab grade: {name}: grading failed: {error}", file=sys.stderr)
            else:
                result.graded.append(name)
                write_csv()
                if on_done:
                    on_done(name)
            bar.update(1)
        pool.close()
    except KeyboardInterrupt:
        result.interrupted = True
        pool.terminate()
    finally:
        pool.join()
        bar.close()
        write_csv()
    return result


def _progress(total: int, initial: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=initial,
        unit="sub",
        desc="grading",
        disable=not enabled,
        file=sys.stderr,
    )


def run_cli(args) -> int:
    """``infralab grade --unit U SUB... --out DIR [--jobs N] [--force]``."""
    if args.json or args.gradescope:
        raise UnitError("--json and --gradescope grade one submission; with many, use --out")
    if not args.out:
        raise UnitError("grading several submissions needs --out DIR (reports and scores.csv)")
    limits = Limits(wall_s=args.timeout) if args.timeout else None
    try:
        result = grade_batch(
            args.unit,
            [Path(p) for p in args.submission],
            Path(args.out),
            jobs=args.jobs,
            force=args.force,
            limits=limits,
            cases=args.case or None,
        )
    except BatchError as exc:
        raise UnitError(str(exc)) from None
    print(
        f"graded {len(result.graded)}, skipped {len(result.skipped)} (already done), "
        f"failed {len(result.failed)}; scores in {result.csv_path}"
    )
    if result.interrupted:
        print("interrupted: finished reports are kept; rerun to grade the rest", file=sys.stderr)
        return 130
    return 1 if result.failed else 0
