"""What the trusted parent decides about one case's child run: a ``Verdict``.

    judge(unit, case, trace_doc, golden, child) -> Verdict

Everything the child produced is untrusted data. Numbers are bounded while the run file is
parsed (``bounded_json``), before the schema sees it, and any exception raised while checking
the run (huge or odd values the checks were not written for, deep nesting) becomes an
``INVALID_SCHEDULE`` verdict with one line, never an exception out of the grader.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from .. import casekinds, diagnosis, verify
from ..cases import Case, Kind
from ..course.golden import case_device_json, case_limits
from ..diagnosis import Diagnosis
from ..sandbox import ChildResult
from ..units import Unit
from ..verify import compare
from ..verify.normalise import normalise_run, oversize
from ..verify.runschema import validate_run_file
from .hidden import UNNAMED, Note, Remark, hidden_feedback, line, phrase
from .report import Status

NOT_IMPLEMENTED = re.compile(r"is not implemented yet|NotImplementedError")
COMPILE_BUDGET = re.compile(
    r"CompileBudgetError: (\w{1,64}\.py) did not compile within the ([0-9.]{1,12}) s compile"
)
MISSING_POLICY = re.compile(r"AttributeError: module 'policies' has no attribute '(\w{1,64})'")
MAX_INT_DIGITS = 15  # every integer in a run file is below 10**15
MAX_ABS_FLOAT = 1e15  # and every float is finite and at most this in magnitude


@dataclass
class Verdict:
    """The outcome of one case.

    ``note`` is all a hidden case's feedback says besides the status and the function under
    test (``hidden.hidden_feedback``): a fixed phrase or a catalogue diagnosis, never the
    child's bytes. ``public`` (visible cases only) may replace the note's words with a more
    specific line, and ``detail`` adds what only a visible case may show (its traceback)."""

    status: Status
    note: Note | Diagnosis = Note.NONE
    public: str = ""  # visible cases only: a more specific line than the note's
    detail: str = ""  # visible cases only
    share: float = 0.0  # WRONG_SCHEDULE / WRONG_ANSWER / BELOW_REFERENCE: what matched
    metrics: dict = field(default_factory=dict)  # goodput cases: for the leaderboard
    subject: str = ""  # the function under test, as the unit names it (set by ``judge``)

    @property
    def summary(self) -> str:
        """The visible line after the status words (the note's, or ``public``, named)."""
        if self.status in UNNAMED:
            return self.public
        if not self.public:
            return phrase(self.note, self.subject)
        if self.status is Status.NOT_IMPLEMENTED or not self.subject:
            return self.public
        if self.public.startswith(self.subject):
            return self.public
        return f"{self.subject}: {self.public}"

    def visible_text(self) -> str:
        return line(self.status, self.summary) + (f"\n{self.detail}" if self.detail else "")

    def hidden_text(self, remarks: tuple[Remark, ...] = ()) -> str:
        return hidden_feedback(self.status, self.note, self.subject, remarks)


def judge(unit: Unit, case: Case, trace_doc: dict, golden: dict, child: ChildResult) -> Verdict:
    """Everything the trusted parent decides about one child run (never raises on bad data).

    Every verdict but a pass names the function the case tests (``diagnosis.subject``)."""
    return _named(unit, case, _judge(unit, case, trace_doc, golden, child))


def _named(unit: Unit, case: Case, verdict: Verdict) -> Verdict:
    verdict.subject = diagnosis.subject(unit, case)
    return verdict


def _judge(unit: Unit, case: Case, trace_doc: dict, golden: dict, child: ChildResult) -> Verdict:
    verdict = _how_it_ended(unit, case, child)
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


def _how_it_ended(unit: Unit, case: Case, child: ChildResult) -> Verdict | None:
    """The verdict when the child did not leave a run file to check (None when it did)."""
    if child.skipped:
        return Verdict(Status.TIMEOUT, _skip_note(child.skipped), public=child.summary)
    if child.out_of_time:
        limit = child.limit or "wall time"
        public = f"the run did not finish within the {limit} limit"
        return Verdict(Status.TIMEOUT, Note.TIME_LIMIT, public=public)
    if child.limit:  # memory, file size: stopped by the sandbox
        note = LIMIT_NOTES.get(child.limit, Note.SANDBOX_LIMIT)
        return Verdict(Status.CRASH, note, public=f"the run was {child.summary}")
    if child.output_error:
        note = OUTPUT_NOTES.get(child.output_error, Note.RUN_FILE_REJECTED)
        return Verdict(Status.INVALID_SCHEDULE, note, public=child.summary)
    if child.returncode != 0:
        stderr = child.stderr or ""
        too_slow = COMPILE_BUDGET.search(stderr)
        if too_slow:
            return _too_slow_to_compile(unit, case, too_slow)
        missing = MISSING_POLICY.search(stderr)
        if missing:
            public = (
                f"policies.py defines no function {missing.group(1)}() "
                "(is the file empty or incomplete?)"
            )
            return Verdict(Status.NOT_IMPLEMENTED, Note.MISSING_FUNCTION, public=public)
        if NOT_IMPLEMENTED.search(stderr):
            who = diagnosis.subject(unit, case)
            public = f"{who} (or a function it calls) is not implemented yet"
            return Verdict(Status.NOT_IMPLEMENTED, Note.NOT_IMPLEMENTED, public=public)
        detail = f"exit code {child.returncode}\n{student_traceback(stderr)}"
        refused = _safely(lambda: diagnosis.diagnose_rejection(unit, case, stderr), None)
        if refused is not None:
            return Verdict(Status.CRASH, refused, detail=f"{refused.staff()}\n{detail}")
        return Verdict(Status.CRASH, _crash_note(child), detail=detail)
    if child.output is None:
        if case.kind is Kind.SCRIPT:
            public = f"{case.script} exited without writing its answers"
            return Verdict(Status.CRASH, Note.NO_ANSWERS, public=public)
        return Verdict(Status.CRASH, Note.NO_RUN_FILE)
    return None


def _too_slow_to_compile(unit: Unit, case: Case, found: re.Match) -> Verdict:
    """A file the case imports did not compile within the compile budget: named when it is
    one of the unit's editable files (the grader's own list), else by the generic note."""
    name, budget = found.group(1), found.group(2)
    if name not in unit.editable:
        return Verdict(Status.TIMEOUT, Note.COMPILE_TIME)
    text = f"{name} did not compile within the compile budget"
    note = Diagnosis(diagnosis.subject(unit, case), text)
    public = f"{name} did not compile within the {budget} s compile budget"
    return Verdict(Status.TIMEOUT, note, public=public)


LIMIT_NOTES = {  # ``ChildResult.limit`` values (``sandbox.results.which_limit``)
    "memory": Note.MEMORY_LIMIT,
    "file size": Note.FILE_LIMIT,
    "CPU time or memory": Note.CPU_OR_MEMORY_LIMIT,
}
OUTPUT_NOTES = {
    "larger than the cap for this trace": Note.RUN_FILE_TOO_LARGE,
    "not a regular file with one link": Note.RUN_FILE_NOT_PLAIN,
}


def _skip_note(why: str) -> Note:
    """A case that was not run: the grader's own reason, as one of its notes."""
    from ..sandbox.multicase import SKIPPED_DEADLINE

    return Note.SKIPPED_DEADLINE if why.startswith(SKIPPED_DEADLINE) else Note.SKIPPED_POLICY


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
        return _answers(unit, case, golden, document)
    refused = _refused_early(document, trace_doc)
    if refused is not None:
        return refused
    schema_error = validate_run_file(unit, document)
    if schema_error:
        public = f"the run file does not match the schema ({schema_error})"
        return Verdict(Status.INVALID_SCHEDULE, Note.SCHEMA, public=public)
    run = normalise_run(document["runs"][0], trace_doc)  # the only run the verdict reads
    device = case_device_json(unit, case)  # K, M, page size: the case's, as B and the cap
    mismatch = _run_identity(unit, case, run, device)
    if mismatch is not None:
        return Verdict(Status.INVALID_SCHEDULE, mismatch)
    problems, replay = verify.replay_run(
        run, trace_doc, device, unit=unit, limits=case_limits(unit, case)
    )
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
        return _goodput(case, trace_doc, replay, golden, device)
    return _compared(unit, case, trace_doc, device, run, replay, golden)


def _refused_early(document, trace_doc: dict) -> Verdict | None:
    """A run file refused before the schema sees it: not exactly one run, another trace, or
    lists longer than any schedule of the trace needs (``verify.normalise.oversize``)."""
    runs = document.get("runs") if isinstance(document, dict) else None
    if isinstance(runs, list) and len(runs) != 1:
        public = f"the run file holds {len(runs)} runs, expected exactly one"
        return Verdict(Status.INVALID_SCHEDULE, Note.NOT_ONE_RUN, public=public)
    if isinstance(document, dict) and "trace" in document and document["trace"] != trace_doc:
        return Verdict(Status.INVALID_SCHEDULE, Note.OTHER_TRACE)
    found = oversize(runs[0], trace_doc) if isinstance(runs, list) else None
    if found is not None:
        return Verdict(
            Status.INVALID_SCHEDULE,
            Note.OVERSIZE,
            public=f"the run file declares more work than its trace allows ({found.what})",
            detail=found.detail,
        )
    return None


def _answers(unit: Unit, case: Case, golden: dict, document) -> Verdict:
    """A script case: the child's answers against the reference's (``golden["answer"]``),
    with the kind of mistake when they differ (``diagnosis.diagnose_answers``)."""
    want = golden["answer"]["answers"]
    got = document.get("answers") if isinstance(document, dict) else None
    if casekinds.same_value(got, want):
        return Verdict(Status.PASSED)
    matched, base = casekinds.answer_share(got, want), casekinds.constant_share(want)
    share = casekinds.credited_share(got, want)
    found = _safely(
        lambda: diagnosis.diagnose_answers(unit, case, got, want, golden["run"]),
        diagnosis.Diagnosis(diagnosis.subject(unit, case), UNCLASSIFIED),
    )
    detail = (
        f"{found.staff()}\n"
        f"{round(matched * 100)} % of the answers equal the reference's; a constant answer "
        f"would match {round(base * 100)} %, and only what is above that earns credit"
    )
    return Verdict(Status.WRONG_ANSWER, found, detail=detail, share=share)


UNCLASSIFIED = "the first difference from the reference could not be classified"


def _safely(compute, fallback):
    """A diagnosis, or ``fallback`` when diagnosing odd data fails: the diagnosis names a kind
    of mistake, it never changes a verdict."""
    try:
        return compute()
    except Exception:  # any failure of the diagnosis falls back to a fixed text
        return fallback


def _goodput(case: Case, trace_doc: dict, replay, golden: dict, device: dict) -> Verdict:
    """A goodput case: the replayed run scored by its goodput relative to the reference's.

    Every figure comes from the parent's own replay (statuses it checked, metrics it
    recomputed from the token times it rebuilt), never from the run file's entries."""
    mine = casekinds.goodput_score(verified_requests(trace_doc, replay), case.slo)
    ref = casekinds.goodput_score(golden["run"]["requests"], case.slo)
    share = casekinds.goodput_share(mine, ref)
    detail = (
        f"goodput {mine.goodput_per_s:.4g} req/s vs reference {ref.goodput_per_s:.4g} req/s "
        f"({mine.qualifying} vs {ref.qualifying} qualifying requests)"
    )
    status = Status.PASSED if share >= casekinds.CAP else Status.BELOW_REFERENCE
    bounds = casekinds.trace_bounds(trace_doc, device)
    metrics = {"goodput": mine.goodput_per_s, "p99TtftMs": mine.p99_ttft_ms, **bounds}
    return Verdict(status, detail=detail, share=share, metrics=metrics)


def verified_requests(trace_doc: dict, replay) -> list[dict]:
    """Each request of the trace with the status the replay checked and the metrics it
    recomputed: what goodput and the leaderboard are computed from."""
    return [
        {
            "arrivalMs": request["arrivalMs"],
            "status": replay.statuses[request["id"]][0],
            **replay.metrics[request["id"]],
        }
        for request in trace_doc["requests"]
    ]


def _compared(unit: Unit, case: Case, trace_doc, device: dict, run: dict, replay, golden):
    """An exact case: the verified run against the golden run; when they differ, the kind of
    the first divergent step (``diagnosis.diagnose_schedule``) is the summary."""
    comparison = compare.compare_with_golden(run, replay, golden["run"])
    if comparison.same:
        return Verdict(Status.PASSED)  # feedback: "passed"
    share = comparison.matching_requests / comparison.total_requests
    limits = case_limits(unit, case)
    found = _safely(
        lambda: diagnosis.diagnose_schedule(
            unit, case, trace_doc, device, limits, run, golden["run"]
        ),
        diagnosis.Diagnosis(diagnosis.subject(unit, case), UNCLASSIFIED),
    )
    detail = found.staff()
    if comparison.divergence is not None:
        order = {r["id"]: n for n, r in enumerate(golden["run"]["requests"])}
        div = comparison.divergence
        detail += (
            f"\nfirst divergence: {div.text()}\n"
            f"{compare.side_by_side(golden['run']['events'], run['events'], order, div.index)}"
        )
    elif comparison.metric_mismatch:
        detail += f"\nrecomputed {comparison.metric_mismatch} differs from the reference"
    return Verdict(Status.WRONG_SCHEDULE, found, detail=detail, share=share)


_LAB_PATH = re.compile(r'File "[^"]*?/([^/"]+\.py)"')


def student_traceback(stderr: str, limit: int = 20) -> str:
    """The part of a child's stderr a student needs: their own frames and the error line.

    Temp-folder paths are shortened to the file name; frames inside the engine before the
    first frame of an editable file are dropped.
    """
    lines = _LAB_PATH.sub(r'File "\1"', stderr.strip()).splitlines()
    starts = [n for n, line in enumerate(lines) if line.startswith("Traceback")]
    if not starts:
        return "\n".join(lines[-limit:])
    block = lines[starts[-1] :]
    own = next((n for n, line in enumerate(block) if 'File "policies.py"' in line), 1)
    kept = [block[0], *block[max(own, 1) :]]
    return "\n".join(kept[-limit:])


def _crash_note(child: ChildResult) -> Note:
    """What stopped the child, as one of two fixed notes.

    Deliberately coarse: the exception's type or message would be a channel through which a
    submission could smuggle details of a hidden trace out. Visible cases add the traceback.
    """
    if "simulate.py: error:" in (child.stderr or ""):
        return Note.ENGINE_REJECTED
    return Note.EXCEPTION


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
