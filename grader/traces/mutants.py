"""The mutant corpus: plausible wrong ``policies.py`` files, and which graded cases kill them.

Mutants live in the unit's folder, ``labs/<unit>/mutants/<name>.py`` (``mutants`` in
unit.yaml names another folder); the first line of each docstring says what
is wrong. ``kill_matrix`` grades every mutant on every case (in-process: mutants are staff code)
and ``infralab trace mutants`` prints the matrix and warns about mutants no hidden case kills.
"""

from __future__ import annotations

import ast
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from ..grading.grade import GradeReport, Status, grade_submission
from ..grading.inprocess import run_in_process
from ..grading.reference_memo import remembered
from ..grading.submission import Submission
from ..units import Unit


@dataclass(frozen=True)
class Mutant:
    name: str
    path: Path
    target: str = "policies.py"  # the editable file it replaces

    @property
    def summary(self) -> str:
        doc = ast.get_docstring(ast.parse(self.path.read_text(encoding="utf-8"))) or ""
        return " ".join(doc.split()).removeprefix("Mutant: ")

    def submission(self, unit: Unit | None = None) -> Submission:
        """The mutant as a submission.

        With ``mutants_base: reference`` in unit.yaml the mutant file holds only what it changes:
        it is appended to the solution's version of its target (its definitions replace the
        reference's), and the solution's other editable files complete the submission, so a
        mutant of one file is judged on that file alone.
        """
        source = self.path.read_bytes()
        if unit is None or unit.doc.get("mutants_base", "none") != "reference":
            return Submission({self.target: source}, source=str(self.path))
        files = {name: (unit.solutions_dir / name).read_bytes() for name in unit.editable}
        files[self.target] = files[self.target] + b"\n\n# --- mutant ---\n" + source
        return Submission(files, source=str(self.path))


def list_mutants(unit: Unit) -> list[Mutant]:
    """``mutants/*.py`` mutate the first editable file, ``mutants/<stem>/*.py`` ``<stem>.py``."""
    folder = unit.mutants_dir
    found = [
        Mutant(p.stem, p, unit.editable[0])
        for p in sorted(folder.glob("*.py"))
        if not p.name.startswith("_")
    ]
    for name in unit.editable[1:]:
        stem = Path(name).stem
        found += [
            Mutant(f"{stem}/{p.stem}", p, name)
            for p in sorted((folder / stem).glob("*.py"))
            if not p.name.startswith("_")
        ]
    return found


@dataclass(frozen=True)
class MutantResult:
    mutant: Mutant
    report: GradeReport

    def status(self, case_id: str) -> Status:
        return next(c.status for c in self.report.cases if c.id == case_id)

    @property
    def killed_by(self) -> list[str]:
        return [c.id for c in self.report.cases if c.points < c.max_points]

    @property
    def killed_by_hidden(self) -> list[str]:
        return self.report.killed_by()


def _grade(unit: Unit, mutant: Mutant) -> MutantResult:
    return MutantResult(
        mutant, grade_submission(unit, mutant.submission(unit), runner=run_in_process)
    )


def kill_matrix(
    unit: Unit,
    mutants: list[Mutant] | None = None,
    jobs: int = 1,
    on_done: Callable[[Mutant], None] | None = None,
) -> list[MutantResult]:
    """Every mutant graded on every case, in the order given; ``jobs`` mutants at once (one
    forked worker process each; the cases of one mutant run one after another), ``on_done``
    called in the parent as each one finishes. A case whose run file is byte for byte the
    reference's takes the reference's verdict (``verdict_memo``), judged once before the
    workers fork."""
    mutants = list_mutants(unit) if mutants is None else mutants
    if len(mutants) <= 1:
        return _kill_rows(unit, mutants, jobs, on_done)
    with remembered(unit):  # most cases of a mutant write the reference's run file
        return _kill_rows(unit, mutants, jobs, on_done)


def _kill_rows(unit: Unit, mutants: list[Mutant], jobs: int, on_done) -> list[MutantResult]:
    if jobs <= 1 or len(mutants) <= 1:
        results = []
        for mutant in mutants:
            results.append(_grade(unit, mutant))
            if on_done:
                on_done(mutant)
        return results
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(min(jobs, len(mutants)), mp_context=context) as pool:
        futures = {pool.submit(_grade, unit, m): n for n, m in enumerate(mutants)}
        done: dict[int, MutantResult] = {}
        for future in as_completed(futures):
            done[futures[future]] = future.result()
            if on_done:
                on_done(mutants[futures[future]])
    return [done[n] for n in range(len(mutants))]


CODES = {
    Status.PASSED: ".",
    Status.WRONG_SCHEDULE: "W",
    Status.INVALID_SCHEDULE: "I",
    Status.INCONSISTENT_STATS: "S",
    Status.CRASH: "C",
    Status.TIMEOUT: "T",
    Status.NOT_IMPLEMENTED: "N",
    Status.WRONG_ANSWER: "A",
    Status.BELOW_REFERENCE: "B",
}


def render_matrix(results: list[MutantResult]) -> str:
    """One row per mutant: a status letter per case, then the hidden cases that kill it."""
    if not results:
        return "no mutants"
    cases = results[0].report.cases
    lines = ["cases (columns):"]
    for n, case in enumerate(cases):
        lines.append(f"  {n + 1:>2} {case.id} ({case.visibility.value})")
    legend = ", ".join(f"{code} {status.value}" for status, code in CODES.items())
    lines.append(f"legend: {legend}")
    width = max(len(r.mutant.name) for r in results)
    lines.append("")
    lines.append(
        f"{'mutant'.ljust(width)}  {''.join(str((n + 1) % 10) for n in range(len(cases)))}"
    )
    for result in results:
        row = "".join(CODES[c.status] for c in result.report.cases)
        hidden = result.killed_by_hidden
        tail = f"killed by hidden: {', '.join(hidden)}" if hidden else "SURVIVES the hidden set"
        lines.append(f"{result.mutant.name.ljust(width)}  {row}  {tail}")
    return "\n".join(lines)
