"""Issue 31, finding 6: each verdict depends on its own case only.

A public case's verdict and feedback must be the same whatever the submission does on hidden
traces. Each submission here is the reference, plus a prologue that recognises a hidden trace
(any trace that is not one of the lab folder's public traces) and then misbehaves in one way:
crashing with the trace in the message, burning CPU, sleeping, exiting, killing the sandboxed
runner, leaving files and environment behind, flooding stdout, or scheduling wrongly. Every
student view of every public case (status, points, feedback; the Gradescope summary and
public tests) must equal the reference's byte for byte, in every isolation mode.

The judging side has the same guarantee (``test_hidden_run_files_cannot_change_public_verdicts``
in ``tests/grader/test_verified_scoring.py``): a hidden case whose checks loop, allocate or
kill the judging child, or that uses up the judging time, leaves every public verdict as it is.
"""

from __future__ import annotations

import pytest

from grader.grading.grade import Status, grade_submission
from grader.grading.submission import Submission
from grader.sandbox import Limits

LIMITS = Limits(wall_s=5, submission_s=120, cpu_s=1)

PROLOGUE = """
import json as _json
import os as _os
import sys as _sys
from pathlib import Path as _Path


def _is_hidden():
    if "--trace" not in _sys.argv:
        return False
    doc = _json.loads(_Path(_sys.argv[_sys.argv.index("--trace") + 1]).read_text())
    here = _Path(__file__).resolve().parent / "traces"
    public = [_json.loads(p.read_text()) for p in sorted(here.glob("*.json"))]
    return doc not in public, doc


_HIDDEN, _DOC = _is_hidden() or (False, None)
"""

BEHAVIOURS = {
    "crash": "raise RuntimeError(f\"LEAK {_DOC['name']} {_DOC['requests'][:3]}\")",
    "burn": "while True:\n        pass",
    "sleep": "import time as _t\n    _t.sleep(60)",
    "exit": "_os._exit(7)",
    "kill_runner": "import signal as _s\n    _os.kill(_os.getppid(), _s.SIGKILL)",
    "state": (
        "for _d in ('/tmp', '.', _os.path.expanduser('~')):\n"
        "        try:\n"
        "            _Path(_d, 'infralab-hidden-was-here').write_text(_DOC['name'])\n"
        "        except OSError:\n"
        "            pass\n"
        "    _os.environ['INFRALAB_LEAK'] = _DOC['name']\n"
        "    import servesim as _servesim\n"
        "    _servesim.LEAK = _DOC['name']\n"
        "    print('LEAK', _DOC['name'], file=_sys.stderr)\n"
        "    raise SystemExit(4)"
    ),
    "flood": "print('LEAK ' * 4_000_000)\n    raise SystemExit(5)",
    "wrong": "WRONG = True",
}

WRONG_FCFS = """

if _HIDDEN and globals().get("WRONG"):
    _right_fcfs = fcfs

    def fcfs(view):
        if view.waiting:
            last = view.waiting[-1]
            return Batch.prefill_of(last, last.remaining_prefill)
        return _right_fcfs(view)
"""


def misbehaving(solution: bytes, behaviour: str) -> bytes:
    prologue = f"{PROLOGUE}\nif _HIDDEN:\n    {BEHAVIOURS[behaviour]}\n"
    return prologue.encode() + b"\n" + solution + WRONG_FCFS.encode()


def public_views(report) -> dict:
    """Everything a student is shown of the public cases (times aside)."""
    cases = [(c.id, c.status, c.points, c.feedback) for c in report.cases if not c.hidden]
    gradescope = report.to_gradescope()
    tests = [t for t in gradescope["tests"] if t["visibility"] == "visible"]
    student = report.to_json()
    shown = [
        {k: v for k, v in c.items() if k != "seconds"}
        for c in student["cases"]
        if c["visibility"] == "public"
    ]
    return {"cases": cases, "output": gradescope["output"], "tests": tests, "json": shown}


_HONEST: dict[str, object] = {}  # mode -> the reference's report


def honest_report(unit, solution, mode):
    if mode not in _HONEST:
        _HONEST[mode] = grade_submission(unit, Submission({"policies.py": solution}), limits=LIMITS)
    return _HONEST[mode]


@pytest.mark.parametrize("behaviour", sorted(BEHAVIOURS))
def test_public_verdicts_do_not_depend_on_hidden_traces(unit, solution, mode, behaviour):
    honest = honest_report(unit, solution, mode)
    assert honest.score == honest.max_score, honest.text(staff=True)
    source = misbehaving(solution, behaviour)
    report = grade_submission(unit, Submission({"policies.py": source}), limits=LIMITS)
    hidden = [c for c in report.cases if c.hidden]
    # the prologue did recognise the hidden traces: some hidden case lost its points ...
    assert [c for c in hidden if c.status is not Status.PASSED], report.text(staff=True)
    # ... and no public case noticed
    assert public_views(report) == public_views(honest)
