"""Judging one case's child run: ``judge(unit, case, trace_doc, golden, child) -> Verdict``.

Everything the child produced is untrusted data. Numbers are bounded while the run file is
parsed (``bounded_json``), before the schema sees it, and any exception raised while checking
the run (huge or odd values the checks were not written for, deep nesting) becomes an
``INVALID_SCHEDULE`` verdict with one line, never an exception out of the grader. The order:
how the child ended (``child_exit``), then the run file (parsed, refused early, validated,
normalised, the run asked for, replayed), then the score against the reference (``scoring``).
"""

from __future__ import annotations

import json
import math

from .. import diagnosis, verify
from ..cases import Case, Kind
from ..course.golden import case_device_json, case_limits
from ..sandbox import ChildResult
from ..units import Unit
from ..verify.normalise import normalise_run, oversize
from ..verify.runschema import validate_run_file
from .child_exit import how_it_ended
from .hidden import Note
from .report import Status
from .scoring import answers, compared, goodput
from .verdict import Verdict

MAX_INT_DIGITS = 15  # every integer in a run file is below 10**15
MAX_ABS_FLOAT = 1e15  # and every float is finite and at most this in magnitude


def judge(unit: Unit, case: Case, trace_doc: dict, golden: dict, child: ChildResult) -> Verdict:
    """Everything the trusted parent decides about one child run (never raises on bad data).

    Every verdict but a pass names the function the case tests (``diagnosis.subject``)."""
    return _named(unit, case, _judge(unit, case, trace_doc, golden, child))


def _named(unit: Unit, case: Case, verdict: Verdict) -> Verdict:
    verdict.subject = diagnosis.subject(unit, case)
    return verdict


def _judge(unit: Unit, case: Case, trace_doc: dict, golden: dict, child: ChildResult) -> Verdict:
    verdict = how_it_ended(unit, case, child)
    if verdict is not None:
        return verdict
    try:
        return _judge_run(unit, case, trace_doc, golden, child.output)
    except (
        ValueError,
        TypeError,
        KeyError,
        IndexError,
        AttributeError,
        ArithmeticError,
        RecursionError,
        MemoryError,
    ) as exc:
        return Verdict(
            Status.INVALID_SCHEDULE,
            Note.UNCHECKABLE,
            detail=f"({type(exc).__name__} while checking it)",
        )


def bounded_json(data: bytes):
    """The run file parsed with every number bounded (``ValueError`` otherwise)."""
    return json.loads(
        data.decode("utf-8"),
        parse_int=_bounded_int,
        parse_float=_bounded_float,
        parse_constant=_reject_constant,
    )


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError("an integer in the run file is too large")
    return int(text)


def _bounded_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or abs(value) > MAX_ABS_FLOAT:
        raise ValueError("a number in the run file is too large")
    return value


def _reject_constant(token: str):
    raise ValueError(f"{token} is not valid JSON")


def _judge_run(unit: Unit, case: Case, trace_doc: dict, golden: dict, output: bytes) -> Verdict:
    """Parse, refuse early, validate, normalise, replay, then score from the replay alone."""
    try:
        document = bounded_json(output)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        if "too large" in str(exc):
            public = f"the run file was rejected: {exc}"
            return Verdict(Status.INVALID_SCHEDULE, Note.NUMBER_TOO_LARGE, public=public)
        return Verdict(Status.INVALID_SCHEDULE, Note.NOT_JSON)
    if case.kind is Kind.SCRIPT:
        return answers(unit, case, golden, document)
    refused = _refused_early(unit, document, trace_doc)
    if refused is not None:
        return refused
    schema_error = validate_run_file(unit, document)
    if schema_error:
        public = f"the run file does not match the schema ({schema_error})"
        return Verdict(Status.INVALID_SCHEDULE, Note.SCHEMA, public=public)
    run = normalise_run(unit, document["runs"][0], trace_doc)  # the only run the verdict reads
    device = case_device_json(unit, case)  # K, M, page size: the case's, as B and the cap
    mismatch = _run_identity(unit, case, run, device)
    if mismatch is not None:
        return Verdict(Status.INVALID_SCHEDULE, mismatch)
    problems, replay = verify.replay_run(run, trace_doc, device, limits=case_limits(unit, case))
    invalid = [p for p in problems if p.kind is verify.ProblemKind.INVALID_SCHEDULE]
    if invalid:
        return Verdict(
            Status.INVALID_SCHEDULE,
            Note.DEVICE_RULE,
            public=invalid[0].safe_text(),
            detail="\n".join(p.message for p in invalid[:3]),
        )
    if problems:
        names = ", ".join(dict.fromkeys(p.statistic for p in problems))
        detail = "\n".join(p.message for p in problems[:3])
        if run["fault"]:
            detail += f"\n(the run file says fault switch {run['fault']} was on)"
        public = f"reported {names} disagree(s) with the timeline"
        return Verdict(Status.INCONSISTENT_STATS, Note.STATS_DISAGREE, public, detail)
    if run["fault"]:
        return Verdict(Status.INVALID_SCHEDULE, Note.FAULT_SWITCH)
    if case.kind is Kind.GOODPUT:
        return goodput(case, trace_doc, replay, golden, device)
    return compared(unit, case, trace_doc, device, run, replay, golden)


def _refused_early(unit: Unit, document, trace_doc: dict) -> Verdict | None:
    """A run file refused before the schema sees it: not exactly one run, another trace, or a
    field past the bound its schema states (``verify.normalise.oversize``: lists longer than
    any schedule of the trace needs, strings and free-form objects larger than allowed)."""
    runs = document.get("runs") if isinstance(document, dict) else None
    if isinstance(runs, list) and len(runs) != 1:  # the count is the file's: not quoted
        return Verdict(Status.INVALID_SCHEDULE, Note.NOT_ONE_RUN)
    if isinstance(document, dict) and "trace" in document and document["trace"] != trace_doc:
        return Verdict(Status.INVALID_SCHEDULE, Note.OTHER_TRACE)
    found = oversize(unit, document, trace_doc)
    if found is not None:
        return Verdict(
            Status.INVALID_SCHEDULE, Note.OVERSIZE, public=found.public, detail=found.detail
        )
    return None


def _run_identity(unit: Unit, case: Case, run: dict, device: dict) -> Note | None:
    """Why the (normalised) run is not the run this case asked for (None when it is): the
    policy, its parameters, the device (K, M, page size) and the engine limits (B, queue cap)
    must be the case's, which the replay then enforces."""
    if run["policy"] != case.policy or run["params"] != case.params:
        return Note.OTHER_RUN
    if run["device"] != device:
        return Note.OTHER_DEVICE
    limits = case_limits(unit, case)
    if limits is not None and run.get("limits") != limits:
        return Note.OTHER_LIMITS
    return None
