"""Every variant as strict as the fixed set: each mutant loses points on a hidden case of it.

    survivors(variant, hints=None) -> [mutant names]   # none: the variant discriminates
    read_hints(unit) / write_hints(unit, results)      # which hidden cases killed each mutant

A variant is checked mutant by mutant (``grader.traces.mutants``, graded in-process: mutants
are staff code). A mutant is graded first on the hidden cases that killed it on the fixed set
(the hints file, ``traces/<unit>/mutant-killers.json``, written by ``infralab trace mutants
--write-hints``), one at a time, then, only if it survives those, on every other hidden case:
the hints make the check fast, never its answer. A stale or missing hints file only makes it
slower.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..cases import load_grading
from ..grading.grade import grade_submission
from ..grading.inprocess import run_in_process
from ..jsonio import write_text_atomic
from ..traces.mutants import Mutant, MutantResult, list_mutants
from ..units import Unit

HINTS = "mutant-killers.json"


def hints_path(unit: Unit) -> Path:
    return unit.course_root / "traces" / unit.id / HINTS


def read_hints(unit: Unit) -> dict[str, list[str]]:
    """Mutant name -> the hidden case ids that killed it on the fixed set ({} without a file)."""
    try:
        doc = json.loads(hints_path(unit).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: list(v) for k, v in doc.get("killers", {}).items() if isinstance(v, list)}


def write_hints(unit: Unit, results: list[MutantResult]) -> Path:
    """The hints of a fixed-set kill matrix, written where ``read_hints`` finds them."""
    doc = {
        "generatedBy": f"infralab trace mutants --unit {unit.id} --write-hints",
        "killers": {r.mutant.name: r.killed_by_hidden for r in results},
    }
    path = hints_path(unit)
    write_text_atomic(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return path


def survivors(
    variant: Unit, mutants: list[Mutant] | None = None, hints: dict | None = None
) -> list[str]:
    """The mutants that no hidden case of ``variant`` takes a point from."""
    hints = read_hints(variant) if hints is None else hints
    hidden = [case.id for case in load_grading(variant).cases if case.hidden]
    lost = []
    for mutant in list_mutants(variant) if mutants is None else mutants:
        first = [c for c in hints.get(mutant.name, ()) if c in hidden]
        rest = [c for c in hidden if c not in first]
        tries = [[case] for case in first] + [rest]  # one hint at a time: most kill at once
        if not any(_kills(variant, mutant, cases) for cases in tries if cases):
            lost.append(mutant.name)
    return lost


def _kills(variant: Unit, mutant: Mutant, cases: list[str]) -> bool:
    submission = mutant.submission(variant)
    report = grade_submission(variant, submission, cases=cases, runner=run_in_process)
    return bool(report.killed_by())
