"""What bounds the grading of one submission, from the unit's config and the case's trace.

limits_for(unit, timeout_s=None, all_cases=False) -> Limits
run_file_cap(trace_doc) -> int
hidden_material(unit) -> list[Path]   # unit_material(unit) and the secrets read
"""

from __future__ import annotations

from pathlib import Path

from ..cases import load_grading
from ..sandbox import Limits
from ..units import Unit, UnitError, load_unit, unit_ids
from ..variants.keys import secrets_read

RUN_FILE_BASE = 64 * 1024  # run-file cap: this much, plus
RUN_FILE_PER_UNIT = 1024  # this much per request and per input or output token of the trace


def limits_for(unit: Unit | str, timeout_s: float | None = None, all_cases: bool = False) -> Limits:
    """The sandbox limits of a unit's grading (``unit.yaml``: ``grading.timeout_s`` per case,
    ``grading.submission_timeout_s`` per submission); ``timeout_s`` overrides the first."""
    unit = load_unit(unit) if isinstance(unit, str) else unit
    grading = load_grading(unit)
    return Limits(
        wall_s=timeout_s or grading.timeout_s,
        submission_s=grading.submission_timeout_s,
        all_cases=all_cases,
    )


def hidden_material(unit: Unit) -> list[Path]:
    """What a child must never read: the unit's own material (``unit_material``) and every
    variant secret this process has read (``variants.keys.secrets_read``), whichever command
    read it."""
    paths = (*unit_material(unit), *secrets_read())
    return [path for path in dict.fromkeys(paths) if path.exists()]


def unit_material(unit: Unit) -> list[Path]:
    """The hidden traces and golden files (a variant's and the fixed set's), the solutions and
    the unit folder (``labs/<id>``: the mutants there are the reference with one mistake each,
    the notebook's source holds its solutions, unit.yaml names the hidden traces) of ``unit``
    and of every other unit of its course: a child graded on one unit must not read another's
    (a later unit's solutions, shown in a public case's traceback)."""
    labs = unit.unit_dir.parent
    paths = [unit.traces_dir]
    for other in dict.fromkeys([unit.id, *unit_ids(labs)]):
        paths += [unit.course_root / "traces" / other, labs / other]
        paths.append(unit.solutions_dir if other == unit.id else _solutions(unit, labs, other))
    return paths


def _solutions(unit: Unit, labs: Path, other: str) -> Path:
    """Another unit's solutions folder (``solutions/<id>`` where its unit.yaml cannot say)."""
    try:
        return unit.course_root / load_unit(other, labs).doc["solutions"]
    except UnitError:
        return unit.course_root / "solutions" / other


def run_file_cap(trace_doc: dict) -> int:
    """The largest run file accepted for a trace: far above what any valid schedule needs
    (a reference run file takes at most about 270 bytes per request and token)."""
    requests = trace_doc.get("requests") or []
    work = len(requests) + sum(
        int(r.get("inputTokens", 0)) + int(r.get("outputTokens", 0)) for r in requests
    )
    return RUN_FILE_BASE + RUN_FILE_PER_UNIT * work
