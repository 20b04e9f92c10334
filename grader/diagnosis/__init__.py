"""Diagnosing feedback: the function that failed a case and the kind of its first mistake.

    diagnose_schedule(unit, case, trace_doc, device, limits, run, golden_run) -> Diagnosis
    diagnose_answers(unit, case, got, want, golden_run) -> Diagnosis
    diagnose_rejection(unit, case, stderr) -> Diagnosis | None

A failing case's feedback names the function under test (``continuous() in policies.py``,
``goodput() in measure.py``) and the kind of its first divergence from the reference, from the
unit's catalogue ``labs/<unit>/diagnoses.yaml`` (``catalogue``): an ordered list of entries,
each a named check (``schedule``, ``answers``, ``rejections``), the functions it applies to,
the fixed text a student sees and the mutant of ``labs/<unit>/mutants/`` that shows it (a test
grades every mutant and expects its entry's text). The first entry whose check matches wins;
otherwise a fixed phrase describes the coarse shape of the difference.

What it reads, and where it runs: only what the trusted side already holds. A schedule is
diagnosed from the verified, normalised run (the replay accepted it) and the golden run, an
answer from the parsed answers and the golden run; an engine rejection from the child's last
error line, matched against fixed patterns and never quoted. It runs inside ``judge.judge``,
so in the judging child under its CPU and memory ceilings (``grading.judging``), never with
student code imported. The student's text is always one of the catalogue's or the fixed
phrases: no id, time, size or count of a hidden trace, and a submission can at most choose
which of these fixed texts it earns (a few bits per case, as the status already allows).
Staff detail keeps the full first divergence and the entry's id.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .catalogue import Catalogue, Entry, case_function, load_catalogue, subject

__all__ = [
    "Catalogue",
    "Diagnosis",
    "Entry",
    "case_function",
    "diagnose_answers",
    "diagnose_rejection",
    "diagnose_schedule",
    "load_catalogue",
    "subject",
]


@dataclass(frozen=True)
class Diagnosis:
    subject: str  # "continuous() in policies.py"
    kind: str  # a catalogue text or a fixed phrase: safe for hidden cases
    entry: str | None = None  # the catalogue entry's id (staff detail)

    def text(self) -> str:
        return f"{self.subject}: {self.kind}"

    def staff(self) -> str:
        return f"diagnosis: {self.entry or 'no catalogue entry'} ({self.kind})"


def _first(entries: list[Entry], checks: dict, pair) -> Entry | None:
    for entry in entries:
        function = checks.get(entry.check)
        if function is None:
            continue
        try:
            if function(replace(pair, params=entry.params)):
                return entry
        except (ArithmeticError, KeyError, IndexError, TypeError, ValueError):
            continue  # a check that cannot read these answers does not match them
    return None


def diagnose_schedule(unit, case, trace_doc, device: dict, limits, run: dict, golden_run: dict):
    """The kind of the first step where ``run`` (verified) departs from ``golden_run``."""
    from servesim import DeviceProfile, parse_trace

    from . import schedule, state

    who = subject(unit, case)
    k = state.first_divergence(run["events"], golden_run["events"])
    if k is None:
        return Diagnosis(who, "the token times differ from the reference's", None)
    trace = parse_trace(trace_doc, source="trace")
    profile = DeviceProfile.from_json(device, source="device")
    shared = state.shared_state(trace, profile, golden_run, k, limits)
    events_got, events_want = run["events"], golden_run["events"]
    pair = schedule.StepPair(
        shared,
        state.Step.of(events_want[k] if k < len(events_want) else None),
        state.Step.of(events_got[k] if k < len(events_got) else None),
    )
    entries = load_catalogue(unit).for_function(case_function(unit, case))
    entry = _first(entries, schedule.CHECKS, pair)
    if entry is not None:
        return Diagnosis(who, entry.text, entry.id)
    return Diagnosis(who, schedule.describe(pair), None)


def diagnose_answers(unit, case, got, want, golden_run: dict) -> Diagnosis:
    """The kind of mistake in a script case's answers."""
    from . import answers

    pair = answers.AnswerPair(got, want, golden_run["requests"], dict(case.args))
    entries = load_catalogue(unit).for_function(case_function(unit, case))
    entry = _first(entries, answers.CHECKS, pair)
    if entry is not None:
        return Diagnosis(subject(unit, case), entry.text, entry.id)
    return Diagnosis(subject(unit, case), answers.describe(pair), None)


def diagnose_rejection(unit, case, stderr: str) -> Diagnosis | None:
    """The engine rule that refused a step of the run (None when no known rule did)."""
    from .rejections import TEXTS, rejection

    name = rejection(stderr)
    if name is None:
        return None
    for entry in load_catalogue(unit).for_function(case_function(unit, case)):
        if entry.check == name:
            return Diagnosis(subject(unit, case), entry.text, entry.id)
    return Diagnosis(subject(unit, case), TEXTS[name], None)
