"""What a variant shares with the fixed set: the cases whose trace it did not redraw.

    unvaried_cases(unit) -> [case ids]               # on a trace no variant redraws
    same_cases(fixed, variant) -> [case ids]         # the trace file is byte for byte the fixed one
    golden_texts(fixed, variant, ids) -> {id: text}  # the fixed set's golden file of each

A case's golden document is a function of the case, its trace's bytes, the device, the engine
and the reference solution. On a case whose trace file a variant did not redraw, every one of
these is the fixed set's, so its golden file is the fixed set's file, byte for byte: a variant
copies it instead of running the reference again (``store``). A fixed golden file is copied
only when its header still names that trace's SHA-256, today's engine version and the case as
unit.yaml states it; otherwise the case is built as any other (``infralab golden --check``
keeps the fixed files fresh, and the variant hash covers their bytes).
"""

from __future__ import annotations

import json

import servesim

from ..cases import load_grading, sha256_file, trace_path
from ..course.golden import golden_path
from ..units import Unit
from . import drawn


def unvaried_cases(unit: Unit) -> list[str]:
    """The ids of the cases on traces that no variant of ``unit`` redraws."""
    varied = set(drawn.public_names(unit)) | set(drawn.hidden_names(unit))
    return [case.id for case in load_grading(unit).cases if case.trace not in varied]


def same_cases(fixed: Unit, variant: Unit) -> list[str]:
    """The ids of ``variant``'s cases whose trace file is byte for byte ``fixed``'s."""
    same = []
    for case in load_grading(variant).cases:
        mine, theirs = trace_path(variant, case), trace_path(fixed, case)
        if mine.read_bytes() == theirs.read_bytes():
            same.append(case.id)
    return same


def golden_texts(fixed: Unit, variant: Unit, ids: list[str]) -> dict[str, str]:
    """Case id -> the fixed set's golden text, for each of ``ids`` whose fixed file is current
    for the variant's trace; the others are left out (the variant builds them)."""
    grading, texts = load_grading(variant), {}
    for case_id in ids:
        case = grading.by_id(case_id)
        try:
            text = golden_path(fixed, case).read_text(encoding="utf-8")
            head = json.loads(text)
        except (OSError, ValueError):
            continue
        current = (
            head.get("engineVersion") == servesim.ENGINE_VERSION
            and head.get("case") == case.spec
            and head.get("trace", {}).get("sha256") == sha256_file(trace_path(variant, case))
        )
        if current:
            texts[case_id] = text
    return texts
