"""A batch's worker pool: one forked worker process per submission, a few at a time.

Each worker grades its submission and writes its reports (``cohort_reports``) atomically, with
SIGTERM held, before it exits. A worker that dies without a finished report (killed for memory,
a signal) becomes an error row for its submission, retried on the next run. SIGINT keeps every
finished report and terminates the workers in progress.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import signal
import sys
from pathlib import Path

from ..jsonio import write_json
from .cohort_reports import PRIVATE_FILE, REPORT_FORMAT, STAFF, read_report, report_path


def run_workers(todo, workers, total, progress, result, write_csv, on_done) -> None:
    """Grade ``todo`` in one forked worker process per submission, ``workers`` at a time,
    recording each in ``result`` (a ``cohort.BatchResult``).

    A worker that ends without a finished report (killed for memory, by a signal, or crashed)
    becomes an error row for its submission, retried on the next run; the batch goes on.
    SIGINT keeps every finished report and terminates the workers in progress.
    """
    workers = max(1, min(workers, len(todo) or 1))
    context = multiprocessing.get_context("fork")
    waiting, running = list(reversed(todo)), {}
    bar = _progress(total, total - len(todo), progress)  # no thread of its own: safe to fork
    try:
        while waiting or running:
            while waiting and len(running) < workers:
                task = waiting.pop()
                worker = context.Process(target=_worker, args=(task,))
                with _sigint_held():
                    worker.start()
                    running[worker.sentinel] = (worker, task)
            for sentinel in multiprocessing.connection.wait(list(running)):
                worker, task = running.pop(sentinel)
                worker.join()
                name, failure = _outcome(worker.exitcode, task)
                if failure:
                    result.failed.append(name)
                    print(
                        f"infralab grade: {name}: {failure} (retried on the next run)",
                        file=sys.stderr,
                    )
                else:
                    result.graded.append(name)
                    if on_done:
                        on_done(name)
                write_csv()
                bar.update(1)
    except KeyboardInterrupt:
        result.interrupted = True
        for worker, _ in running.values():
            worker.terminate()
    finally:
        for worker, _ in running.values():
            worker.join()
        bar.close()
        write_csv()


@contextlib.contextmanager
def _sigint_held():
    """Hold SIGINT while a worker forks: a Ctrl-C landing inside fork() is otherwise swallowed by
    an at-fork handler (logging's) and never interrupts the batch; held, it arrives just after."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _worker(task: tuple) -> None:
    _worker_init()
    _grade_one(task)


def _outcome(exitcode: int | None, task: tuple) -> tuple[str, str | None]:
    """(name, None) for a graded submission, (name, why) for an error row. The worker wrote
    its report, unless it died: then the error row is written here."""
    _, name, _, out, _, _, fingerprint, _ = task
    doc = read_report(report_path(Path(out), name))
    mine = doc is not None and doc.get("fingerprint") == fingerprint
    if mine and (exitcode == 0 or not doc.get("environmentError")):
        return name, doc.get("error") if doc.get("environmentError") else None
    if exitcode is not None and exitcode < 0:
        why = f"the grading worker was killed ({signal.Signals(-exitcode).name})"
    else:
        why = f"the grading worker exited with status {exitcode} without a report"
    row = {"unit": task[0].id, "score": None, "error": why, "environmentError": True}
    row |= {"batchFormat": REPORT_FORMAT, "submission": name, "fingerprint": fingerprint}
    write_json(report_path(Path(out), name), row, mode=PRIVATE_FILE)
    return name, why


def _grade_one(task: tuple) -> tuple[str, str | None]:
    """Worker: grade one submission and write its reports; (name, None) or (name, failure)."""
    unit, name, source, out, limits, cases, fingerprint, own = task  # the unit or a variant
    unit_id = unit.id
    from .errors import EnvironmentFailure, GradingError
    from .grade import grade_submission

    failure, staff = None, None
    try:
        if own:  # a variant: made ready here (``cohort.grade_batch``), else in the parent
            _prepare(unit, cases)
        report = grade_submission(unit, Path(source), cases=cases, limits=limits, jobs=1)
        doc, staff = report.to_json(staff=False), report.to_json(staff=True)
        doc["error"] = None
    except EnvironmentFailure as exc:  # the grader's environment: an error row, retried
        failure = str(exc)
    except GradingError as exc:  # the submission's fault: recorded, scored 0
        doc = {"unit": unit_id, "score": 0.0, "maxScore": None, "parts": {}, "error": str(exc)}
    except Exception as exc:  # a grader bug: an error row, retried on the next run
        failure = f"grading failed: {type(exc).__name__}: {exc}"
    if failure:
        doc = {"unit": unit_id, "score": None, "error": failure, "environmentError": True}
    extra = {"batchFormat": REPORT_FORMAT, "submission": name, "fingerprint": fingerprint}
    doc.update(extra)
    # A SIGTERM from an interrupted batch waits until the report is whole (or never started),
    # so no temp file is left behind between the write and the rename.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        if staff is not None:
            write_json(Path(out) / STAFF / f"{name}.json", staff | extra, mode=PRIVATE_FILE)
        write_json(report_path(Path(out), name), doc, mode=PRIVATE_FILE)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return name, failure


def _prepare(unit, cases) -> None:
    """What a batch's parent does for the fixed set, for one variant in its own worker: warm
    its cases, golden files and template, and recall the reference's verdicts judged when the
    variant was made (``grader.variants.verdicts``). A variant that cannot be made ready is
    the grader's failure (an error row, retried), never the submission's."""
    from .errors import EnvironmentFailure, GradingError
    from .grade import warm

    try:
        warm(unit, cases)
    except GradingError as exc:
        raise EnvironmentFailure(f"the student's variant: {exc}") from None
    getattr(unit, "remember_reference", lambda: False)()


def _worker_init() -> None:
    # Ctrl-C goes to the whole process group: the parent decides, workers carry on until
    # terminated; SIGTERM unwinds (temp folders and sandbox children are cleaned up).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_on_term)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # forked while held


def _exit_on_term(signum, frame):
    raise SystemExit(128 + signum)


def _progress(total: int, initial: int, enabled: bool):
    from tqdm import tqdm

    class Bar(tqdm):
        monitor_interval = 0  # no monitor thread: workers are forked while the bar is shown

    return Bar(
        total=total,
        initial=initial,
        unit="sub",
        desc="grading",
        disable=not enabled,
        file=sys.stderr,
    )
