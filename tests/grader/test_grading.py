"""End-to-end grading: reference, starter, partial submissions, report formats, leaks."""

from __future__ import annotations

import json
import re
import textwrap

import jsonschema

from grader.cases import load_grading
from grader.grading.grade import Status, grade_submission
from grader.parts import unit_parts
from grader.sandbox import Limits

GRADESCOPE_SCHEMA = {
    "type": "object",
    "required": ["score", "tests"],
    "properties": {
        "score": {"type": "number", "minimum": 0},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "stdout_visibility": {"enum": ["hidden", "after_due_date", "after_published", "visible"]},
        "tests": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "score", "max_score", "status", "output", "visibility"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "score": {"type": "number", "minimum": 0},
                    "max_score": {"type": "number", "exclusiveMinimum": 0},
                    "status": {"enum": ["passed", "failed"]},
                    "output": {"type": "string"},
                    "visibility": {
                        "enum": ["hidden", "after_due_date", "after_published", "visible"]
                    },
                },
            },
        },
    },
}


def test_reference_scores_full_marks(reference_report, unit):
    grading = load_grading(unit)
    assert reference_report.max_score == sum(c.points for c in grading.cases)
    assert reference_report.score == reference_report.max_score
    assert {c.status for c in reference_report.cases} == {Status.PASSED}
    assert len(reference_report.cases) == len(grading.cases)
    assert reference_report.isolation and reference_report.isolation != "none"


def test_starter_scores_zero_not_implemented_per_part(starter_report, unit):
    assert starter_report.score == 0
    assert {c.status for c in starter_report.cases} == {Status.NOT_IMPLEMENTED}
    numbers = {p.id: p.number for p in unit_parts(unit)}
    for part in load_grading(unit).parts:
        assert starter_report.part_note(part) == "not implemented"
        assert f"part {numbers[part]} ({part}): 0 / " in starter_report.text()
    assert "not implemented" in starter_report.text()
    # the starter folder holds the whole lab: everything but policies.py is ignored and listed
    assert "simulate.py" in starter_report.ignored


def _policies(tmp_path, source: str):
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "policies.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return folder


def test_one_part_done_other_not_implemented(tmp_path, unit):
    solution = (unit.solutions_dir / "policies.py").read_text(encoding="utf-8")
    only_fcfs = solution.split("def chunked")[0] + textwrap.dedent(
        """
        def chunked(view, chunk):
            raise NotImplementedError("chunked() is not implemented yet")
        """
    )
    cases = ["fcfs-mixed", "fcfs-ties", "chunked-mixed", "chunked-ties-chunk2"]
    report = grade_submission(unit, _policies(tmp_path, only_fcfs), cases=cases)
    fcfs_got, fcfs_max = report.parts["fcfs"]
    assert fcfs_got == fcfs_max > 0
    assert report.parts["chunked"][0] == 0
    assert report.part_note("chunked") == "not implemented"


def test_crash_and_timeout_are_reported(tmp_path, unit):
    crashing = _policies(
        tmp_path,
        """
        def fcfs(view):
            return 1 / 0

        def chunked(view, chunk):
            while True:
                pass
        """,
    )
    report = grade_submission(
        unit, crashing, cases=["fcfs-mixed", "chunked-mixed", "fcfs-ties"], limits=Limits(wall_s=3)
    )
    by_id = {c.id: c for c in report.cases}
    assert by_id["fcfs-mixed"].status is Status.CRASH
    assert "ZeroDivisionError" in by_id["fcfs-mixed"].feedback
    assert "Traceback" in by_id["fcfs-mixed"].feedback  # visible case: the end of stderr
    assert by_id["chunked-mixed"].status is Status.TIMEOUT
    assert by_id["fcfs-ties"].status is Status.CRASH
    assert (
        by_id["fcfs-ties"].feedback
        == "crash: fcfs() in policies.py: an exception was raised in the run"
    )
    assert report.score == 0


def test_visible_failure_shows_first_divergence_and_timelines(mutant_results):
    case = next(
        c for c in mutant_results["prefill_before_decode"].report.cases if c.id == "chunked-mixed"
    )
    assert case.status is Status.WRONG_SCHEDULE
    assert "at 2.25 ms expected decode [A], got prefill L tokens 0–2" in case.feedback
    assert "expected" in case.feedback and "| got" in case.feedback
    assert re.search(r">#1 +2\.25–3\.50 +decode \[A\]", case.feedback)


def test_wrong_schedule_earns_partial_credit(mutant_results):
    # decode_skips_newest delays only some requests: the others keep their exact token times
    case = next(
        c for c in mutant_results["decode_skips_newest"].report.cases if c.id == "fcfs-mixed"
    )
    assert case.status is Status.WRONG_SCHEDULE
    assert 0 < case.points < case.max_points


def _hidden_ids(unit):
    """Every request id of the hidden cases' traces (relabelled ones included)."""
    from grader.cases import case_trace_doc

    return {
        req["id"]
        for case in load_grading(unit).cases
        if case.hidden
        for req in case_trace_doc(unit, case)["requests"]
    }


def test_hidden_feedback_leaks_nothing(unit, mutant_results, starter_report, tmp_path):
    ids = _hidden_ids(unit)
    crash = _policies(tmp_path, "def fcfs(view):\n    raise KeyError(view.waiting[0].id)\n")
    reports = [r.report for r in mutant_results.values()] + [
        starter_report,
        grade_submission(unit, crash, cases=[c.id for c in load_grading(unit).cases if c.hidden]),
    ]
    hidden_texts = []
    for report in reports:
        for case in report.cases:
            if case.hidden:
                hidden_texts.append(case.feedback)
        gradescope = report.to_gradescope()
        hidden_texts += [t["output"] for t in gradescope["tests"] if "(hidden)" in t["name"]]
    assert len(hidden_texts) > 100
    failing = [t for t in hidden_texts if not t.startswith("passed")]
    assert len(failing) > 50
    for text in hidden_texts:
        assert not re.search(r"\d", text), text  # no times, counts or numbered ids at all
        words = set(re.findall(r"[A-Za-z_][\w-]*", text))
        assert not words & ids, text


def test_gradescope_results_validate(reference_report, starter_report, unit):
    for report in (reference_report, starter_report):
        results = report.to_gradescope()
        jsonschema.validate(results, GRADESCOPE_SCHEMA)
        assert results["score"] == report.score
        assert len(results["tests"]) == len(report.cases)
        hidden = [t for t in results["tests"] if ": hidden-" in t["name"]]
        assert hidden and {t["visibility"] for t in hidden} == {"after_published"}
        visible = [t for t in results["tests"] if ": hidden-" not in t["name"]]
        assert {t["visibility"] for t in visible} == {"visible"}
        text = json.dumps(results, allow_nan=False)
        assert not [c.id for c in report.cases if c.hidden and c.id in text]
        assert "hidden cases: results when grades are published" in results["output"]


def test_json_report_round_trips(reference_report):
    doc = json.loads(json.dumps(reference_report.to_json()))
    assert doc["score"] == doc["maxScore"] == reference_report.max_score
    assert set(doc["parts"]) == {"fcfs", "chunked"}
    assert all(c["status"] == "passed" for c in doc["cases"])
    assert "staffDetail" not in doc["cases"][0]


def test_child_folder_holds_no_golden_or_hidden_files(tmp_path, unit):
    """A submission that looks around its working folder finds only the lab and one trace."""
    solution = (unit.solutions_dir / "policies.py").read_text(encoding="utf-8")
    snoop = textwrap.dedent(
        """
        import os as _os

        _seen = sorted(
            _os.path.join(d, f) for d, _, fs in _os.walk(".") for f in fs
        )
        _bad = [p for p in _seen if "golden" in p or "hidden" in p or "specs" in p]
        _lab = ("./traces/", "./schemas/", "./lab.json")
        _extra = [p for p in _seen if p.endswith(".json") and not p.startswith(_lab)]
        if _bad or len(_extra) > 1:  # at most the one trace of the case
            raise RuntimeError(f"found {_bad} {_extra}")
        """
    )
    folder = _policies(tmp_path, solution + snoop)
    report = grade_submission(unit, folder, cases=["fcfs-ties", "chunked-mixed-relabelled"])
    assert report.score == report.max_score, report.text(staff=True)


def _wrapped(unit, body: str) -> str:
    """The reference policies with ``fcfs`` doing ``body`` to its view first."""
    solution = (unit.solutions_dir / "policies.py").read_text(encoding="utf-8")
    return solution + textwrap.dedent(
        f"""

        _reference = fcfs


        def fcfs(view):
            {body}
            return _reference(view)
        """
    )


def test_a_policy_that_changes_its_view_gets_one_sentence(tmp_path, unit):
    """A refused change: the case's feedback is the one sentence naming the function."""
    body = "if view.waiting:\n                view.waiting[0].prefill_target = 1"
    report = grade_submission(unit, _policies(tmp_path, _wrapped(unit, body)), cases=["fcfs-mixed"])
    (case,) = report.cases
    assert case.status is not Status.PASSED
    assert "fcfs() changed its view (prefill_target of request '" in case.feedback, case.feedback
    assert "Traceback" not in case.feedback


def test_writes_behind_the_frozen_view_change_nothing_graded(tmp_path, unit):
    """``object.__setattr__`` on the view, its device and the previous batch writes the
    policy's copies: the run, and so the grade, is the reference's."""
    body = (
        "object.__setattr__(view, 'now_ms', -1.0)\n"
        "            object.__setattr__(view.device, 'decode_batch_ms', 0.0)\n"
        "            if view.previous is not None:\n"
        "                object.__setattr__(view.previous, 'decode', ())"
    )
    report = grade_submission(unit, _policies(tmp_path, _wrapped(unit, body)), cases=["fcfs-mixed"])
    (case,) = report.cases
    assert case.status is Status.PASSED, case.feedback
