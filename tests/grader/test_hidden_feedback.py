"""Issue 31, finding 1: a hidden case's feedback comes from a closed vocabulary.

``grading.hidden.hidden_feedback`` is the one function that builds it, from the case's status,
a fixed note or catalogue diagnosis and the function under test. The property: two children
that end the same way (same status, same note) but differ in every byte the child chose
(stdout, stderr, traceback text, exception type and message, the name a missing attribute is
given, exit code, numbers in an engine error, run-file contents, time taken) produce
byte-identical hidden feedback on every student surface: CLI text, the JSON report (a batch
report is that JSON), Gradescope's results.json with its leaderboard, and the batch CSV.

The children come from a fake runner handed to ``grade_submission``, so everything after the
child (the judging child, the report, its views) is the real path.
"""

from __future__ import annotations

import json
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from varianttools import variant_of

from grader.cases import load_grading
from grader.course.golden import load_golden
from grader.grading.cohort_csv import csv_text
from grader.grading.grade import Status, grade_submission
from grader.grading.hidden import Note, Remark, hidden_feedback
from grader.grading.submission import Submission
from grader.sandbox import ChildResult
from grader.units import load_unit

UNITS = {name: load_unit(name) for name in ("unit07", "unit08")}
HIDDEN = [
    ("unit07", "fcfs-poisson-mix"),
    ("unit07", "chunked-mixed-relabelled"),
    ("unit08", "paged-kv-b512-m96"),
    ("unit08", "measure-tpot-steady"),
    ("unit08-variant", "paged-kv-b512-m96"),  # a student's own variant (issue 50)
    ("unit08-variant", "static-steady-k4"),
    ("unit07-variant", "fcfs-poisson-mix"),  # cases on traces each variant draws again
    ("unit09-variant", "backpressure-mix-b128"),
    ("unit09-variant", "cancel-aware-heavy-b128"),  # a construction each variant perturbs
]


def unit_of(name: str):
    """A unit by name; ``unitNN-variant`` is one student's variant of unit NN."""
    if name.endswith("-variant"):
        return variant_of(name.removesuffix("-variant"), "s002")
    return UNITS[name]


identifiers = st.text(string.ascii_letters + string.digits + "_", min_size=12, max_size=60).map(
    lambda s: f"zq{s}"  # long and odd enough that no fixed text of the grader holds one
)
noise = st.text(max_size=300)
numbers = st.integers(min_value=0, max_value=10**9)


@st.composite
def child_bytes(draw) -> dict:
    """What a child chooses freely: its output streams, exit code, time, exception text."""
    return {
        "stdout": draw(noise),
        "prefix": draw(noise.map(lambda s: s.replace("Error", "").replace("simulate.py", ""))),
        "exc_type": draw(st.sampled_from(["ValueError", "KeyError", "RuntimeError", "LeakError"])),
        "message": draw(noise.map(lambda s: s.replace("\n", " "))),
        "name": draw(identifiers),
        "code": draw(st.integers(min_value=1, max_value=255)),
        "wall_s": draw(st.floats(min_value=0, max_value=1e4, allow_nan=False)),
        "numbers": draw(st.tuples(numbers, numbers, numbers)),
        "junk": draw(st.binary(max_size=200)),
        "count": draw(st.integers(min_value=2, max_value=9)),
        "key": draw(identifiers),
        "limit": draw(st.sampled_from(["wall time", "CPU time"])),
    }


def _child(stderr="", code=1, output=None, **extra) -> dict:
    return {"returncode": code, "stderr": stderr, "output": output, "timed_out": False, **extra}


def _run_file(golden: dict, trace: dict, runs: list) -> bytes:
    return json.dumps({"formatVersion": 1, "trace": trace, "runs": runs}).encode()


def _make(family: str, b: dict, golden: dict, trace: dict) -> dict:
    """A child of ``family`` (how it ended), dressed in the bytes ``b`` it chose."""
    tb = f'{b["prefix"]}\nTraceback (most recent call last):\n  File "policies.py", line 7\n'
    run = golden["run"]
    n1, n2, n3 = b["numbers"]
    if family == "exception":
        return _child(f"{tb}{b['exc_type']}: {b['message']}\n", b["code"])
    if family == "missing-attribute":  # the attack of finding 1: the name carries the data
        line = f"AttributeError: module 'policies' has no attribute '{b['name']}'"
        return _child(f"{tb}{line}\n", b["code"])
    if family == "not-implemented":
        return _child(f"{tb}NotImplementedError: {b['message']}\n", b["code"])
    if family == "engine-rejection":
        line = (
            f"simulate.py: error: policy p: batch at {n1}.5 ms: {n2} new positions, "
            f"token budget {n3}"
        )
        return _child(f"{tb}{line}\n", 2)
    if family == "memory":
        return _child(f"{tb}MemoryError: {b['message']}\n", b["code"])
    if family == "timeout":
        return _child(f"{tb}{b['message']}", None, timed_out=True, limit=b["limit"])
    if family == "no-run-file":
        return _child(b["prefix"], 0)
    if family == "not-json":
        return _child(b["prefix"], 0, output=b"\x00" + b["junk"])
    if family == "many-runs":
        return _child("", 0, output=_run_file(golden, trace, [{"n": n1}] * b["count"]))
    if family == "schema":
        bent = dict(run, **{b["key"]: b["message"]})
        return _child("", 0, output=_run_file(golden, trace, [bent]))
    raise AssertionError(family)


FAMILIES = [
    "exception",
    "missing-attribute",
    "not-implemented",
    "engine-rejection",
    "memory",
    "timeout",
    "no-run-file",
    "not-json",
    "many-runs",
    "schema",
]


def grade_with(unit_id: str, case_id: str, ended: dict):
    """``grade_submission`` on one hidden case whose child ended as ``ended`` says."""
    unit = unit_of(unit_id)

    def runner(lab_dir, files, path, argv, limits, **extra):
        return ChildResult(
            returncode=ended["returncode"],
            stdout=ended.get("stdout", ""),
            stderr=ended["stderr"],
            timed_out=ended["timed_out"],
            output=ended["output"],
            isolation="test",
            limit=ended.get("limit"),
            wall_s=ended.get("wall_s", 0.0),
        )

    runner.in_process = True
    files = {name: b"" for name in unit.editable}
    return grade_submission(unit, Submission(files, source="t"), cases=[case_id], runner=runner)


def student_surfaces(report) -> list[str]:
    """Every student view of a report: CLI text, JSON (the batch report), Gradescope, CSV."""
    doc = report.to_json()
    parts = sorted(doc["parts"])
    return [
        report.text(),
        json.dumps(doc, sort_keys=True),
        json.dumps(report.to_gradescope(), sort_keys=True),
        csv_text(parts, ["s"], lambda name: dict(doc, error=None)),
    ]


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    where=st.sampled_from(HIDDEN),
    family=st.sampled_from(FAMILIES),
    first=child_bytes(),
    second=child_bytes(),
)
def test_hidden_feedback_depends_on_the_status_and_note_only(where, family, first, second):
    unit_id, case_id = where
    unit = unit_of(unit_id)
    case = load_grading(unit).by_id(case_id)
    golden = load_golden(unit, case)
    from grader.cases import case_trace_doc

    trace = case_trace_doc(unit, case)
    one = grade_with(unit_id, case_id, {**_make(family, first, golden, trace), **first})
    two = grade_with(unit_id, case_id, {**_make(family, second, golden, trace), **second})
    (a,), (b,) = one.cases, two.cases
    assert a.status is b.status and a.status is not Status.PASSED
    assert student_surfaces(one) == student_surfaces(two), (a.staff_detail, b.staff_detail)
    for chosen in (first, second):  # and none of what it chose shows
        for value in (chosen["name"], chosen["key"]):
            assert all(value not in s for s in student_surfaces(one if chosen is first else two))


def test_the_property_also_holds_for_the_time_and_stdout_a_child_takes():
    """Same child, other stdout and wall time: the hidden views are the same bytes."""
    unit = UNITS["unit07"]
    case = load_grading(unit).by_id("fcfs-poisson-mix")
    ended = {"returncode": 0, "stderr": "", "output": None, "timed_out": False}
    fast = grade_with(unit.id, case.id, {**ended, "stdout": "", "wall_s": 0.01})
    slow = grade_with(unit.id, case.id, {**ended, "stdout": "LEAK " * 999, "wall_s": 999.0})
    assert student_surfaces(fast) == student_surfaces(slow)
    assert "LEAK" not in "".join(student_surfaces(slow))


def test_hidden_feedback_takes_only_the_graders_own_types():
    """The builder refuses anything but its closed vocabulary (a string would be a channel)."""
    import pytest

    with pytest.raises(TypeError):
        hidden_feedback(Status.CRASH, "AttributeError: LEAK", "fcfs() in policies.py")
    with pytest.raises(TypeError):
        hidden_feedback(Status.PASSED, "LEAK", "fcfs() in policies.py")
    with pytest.raises(TypeError):
        hidden_feedback(Status.CRASH, Note.EXCEPTION, "fcfs() in policies.py", ("LEAK",))
    text = hidden_feedback(Status.CRASH, Note.EXCEPTION, "fcfs() in policies.py", (Remark.KEYED,))
    assert text == (f"crash: fcfs() in policies.py: {Note.EXCEPTION.value}\n{Remark.KEYED.value}")
