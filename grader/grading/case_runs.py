"""Running a submission's cases: each case's input file, then every case in the sandbox, or
through a staff runner, by case id.

    run_all_cases(unit, selected, files, limits, goldens) -> {case id: ChildResult}
    run_with(runner, unit, selected, files, limits, goldens, workers) -> {case id: ChildResult}

What the children produced is judged afterwards, in the trusted parent (``judging``).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from .. import labfolder
from ..cases import Case, Kind, case_trace_doc, trace_path
from ..sandbox import CaseRun, ChildResult, Limits, run_cases, scratch_dir
from ..sandbox.multicase import SKIPPED_POLICY
from ..units import Unit
from .errors import environment_errors
from .limits import run_file_cap

SKIPPED_AFTER_TIMEOUT = SKIPPED_POLICY

# (lab_dir, files, input path, argv, limits[, script=...]) -> ChildResult; ``script`` is passed
# only for script cases, so a runner for exact cases alone may leave it out.
Runner = Callable[[Path, dict, Path, list, Limits], ChildResult]


def run_with(runner: Runner, unit: Unit, selected, files, limits, goldens, workers: int):
    """Every selected case through ``runner`` (staff code and tests), ``workers`` at a time."""

    lab = labfolder.built(unit)

    def one(case: Case) -> ChildResult:
        with tempfile.TemporaryDirectory(prefix="infralab-trace-") as tmp:
            doc = case_trace_doc(unit, case)
            path = _write_case_input(unit, case, goldens[case.id], doc, Path(tmp) / "trace.json")
            extra = {"script": case.script} if case.kind is Kind.SCRIPT else {}
            with environment_errors(f"case '{case.id}': "):
                return runner(lab, files, path, graded_argv(case), limits, **extra)

    if workers > 1 and len(selected) > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:  # joined before judging forks
            return dict(zip((c.id for c in selected), pool.map(one, selected), strict=True))
    return {case.id: one(case) for case in selected}


# The run file a graded case writes: compact (``servesim.compact``), whatever its size. The judge
# accepts both formats from any child and checks a compact entry's lists against the trace before
# expanding it, then replays the expansion as it replays a full entry; a compact file is about a
# tenth of the bytes to encode, send, hash and parse. A run that compact cannot hold (a decode
# that leaves a running request out) is written in full.
RUN_FORMAT = ["--format", "compact"]


def graded_argv(case: Case) -> list[str]:
    """The flags a graded case's child gets (besides its input and output files)."""
    return [] if case.kind is Kind.SCRIPT else [*case.argv(), *RUN_FORMAT]


def _write_case_input(unit: Unit, case: Case, golden: dict, trace_doc: dict, path: Path) -> Path:
    """The file the child gets: the case's trace, or a script case's check file (the
    reference's run of the case and the case's ``args``)."""
    if case.kind is Kind.SCRIPT:
        path.write_text(json.dumps({"run": golden["run"], "args": case.args}), encoding="utf-8")
        return path
    return _write_case_trace(unit, case, trace_doc, path)


def _write_case_trace(unit: Unit, case: Case, trace_doc: dict, path: Path) -> Path:
    """The trace file the child gets: the source bytes, or the transformed document."""
    if case.transform is None:
        path.write_bytes(trace_path(unit, case).read_bytes())
    else:
        path.write_text(json.dumps(trace_doc), encoding="utf-8")
    return path


def run_all_cases(
    unit: Unit, selected: list[Case], files: dict[str, bytes], limits: Limits, goldens: dict
) -> dict[str, ChildResult]:
    """Every selected case in the sandbox (``sandbox.run_cases``), by case id.

    Visible cases go first, so each visible case's results are back before any hidden trace
    is sent. The cases of a policy share a group: once one runs out of time, the policy's
    other cases get the same verdict without running (unless ``limits.all_cases``). With
    ``limits.one_child_per_case`` each case gets a fresh child, within the same submission
    deadline.
    """
    selected = sorted(selected, key=lambda case: case.hidden)
    with tempfile.TemporaryDirectory(prefix="infralab-traces-", dir=scratch_dir()) as tmp:
        runs = []
        for number, case in enumerate(selected):
            path = Path(tmp) / f"trace-{number}.json"
            doc = case_trace_doc(unit, case)
            _write_case_input(unit, case, goldens[case.id], doc, path)
            script = case.script if case.kind is Kind.SCRIPT else "simulate.py"
            group = case.script if case.kind is Kind.SCRIPT else case.policy
            cap = run_file_cap(doc)
            runs.append(CaseRun(path, graded_argv(case), group, cap, script=script))
        lab = labfolder.built(unit)
        with environment_errors():
            if limits.one_child_per_case:
                results = _one_child_each(lab, files, runs, limits)
            else:
                results = run_cases(lab, files, runs, limits)
    return {case.id: result for case, result in zip(selected, results, strict=True)}


def _one_child_each(lab_dir: Path, files, runs: list[CaseRun], limits: Limits) -> list:
    """Each case in a fresh child, all within one submission deadline and policy timeouts."""
    deadline = time.monotonic() + limits.submission_s
    results, timed_out = [], {}
    for run in runs:
        left = deadline - time.monotonic()
        if run.group in timed_out and not limits.all_cases:
            results.append(replace(timed_out[run.group], skipped=SKIPPED_AFTER_TIMEOUT, wall_s=0))
            continue
        result = run_cases(lab_dir, files, [run], replace(limits, submission_s=max(0, left)))[0]
        results.append(result)
        if result.out_of_time and run.group:
            timed_out.setdefault(run.group, result)
    return results
