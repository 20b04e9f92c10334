"""What bounds the grading of one submission, from the unit's config and the case's trace.

limits_for(unit, timeout_s=None, all_cases=False) -> Limits
run_file_cap(trace_doc) -> int
hidden_material(unit) -> list[Path]   # unit_material(unit) and the secrets read
"""

from __future__ import annotations

from pathlib import Path

from ..cases import load_grading
from ..sandbox import Limits
from ..units import Unit, load_unit
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
    """The unit's hidden traces and golden files (a variant's and the fixed set's), its
    solutions, and its unit folder (``labs/<id>``): the mutants there are the reference with
    one mistake each, the notebook's source holds its solutions, and unit.yaml names the hidden
    traces."""
    traces = [unit.traces_dir, unit.course_root / "traces" / unit.id]
    return [*traces, unit.solutions_dir, unit.unit_dir]


def run_file_cap(trace_doc: dict) -> int:
    """The largest run file accepted for a trace: far above what any valid schedule needs
    (a reference run file takes at most about 270 bytes per request and token)."""
    requests = trace_doc.get("requests") or []
    work = len(requests) + sum(
        int(r.get("inputTokens", 0)) + int(r.get("outputTokens", 0)) for r in requests
    )
    return RUN_FILE_BASE + RUN_FILE_PER_UNIT * work
