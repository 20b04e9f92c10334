"""No constant answer earns, in any unit (issue 46, item 1).

Every unit's script cases are read from its ``labs/<unit>/unit.yaml`` (a new unit inherits the
test) and grouped by the function they grade, as the grader judges them. For each group this
test makes every answer a constant can give, by its own rules: every enum member of the unit's
solution files and every name in the reference's answers, ``None``, booleans, empty, zero, each
reference unit (answer, or item of a list answer) with its numbers zeroed and its lists
emptied, then one name at a time replaced by each name or one list by a list of one name, and
every reference unit that occurs more than once (the most common). Each constant is graded
through ``grade_submission`` (a runner writes the answers file a script would write, for every
case of the group at once) and must earn 0 points on the group: judged across the set, not one
answer at a time. A value that occurs once among the reference's units and is not built of
names, booleans, None, zeros and empties is not tried: only computing finds it.
"""

from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path

import pytest

from grader.cases import Kind, load_grading
from grader.course.golden import load_golden
from grader.grading import case_runs
from grader.grading.grade import grade_submission
from grader.grading.submission import Submission
from grader.sandbox import ChildResult
from grader.units import load_unit, unit_ids

EMPTY = [None, [], {}, "", 0, 0.0, False, True]


def script_sets(unit) -> dict[tuple, list]:
    """The unit's script cases by the function they grade (and visibility)."""
    out: dict[tuple, list] = {}
    for case in load_grading(unit).cases:
        if case.kind is Kind.SCRIPT:
            key = (case.script, case.args.get("function"), case.hidden)
            out.setdefault(key, []).append(case)
    return out


def enum_names(unit) -> set[str]:
    """Every member name of every Enum class in the unit's solution files."""
    found = set()
    for name in unit.editable:
        tree = ast.parse((unit.solutions_dir / name).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                getattr(b, "id", "").endswith("Enum") for b in node.bases
            ):
                for item in node.body:
                    if isinstance(item, ast.Assign):
                        found |= {t.id for t in item.targets if isinstance(t, ast.Name)}
    return found


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)


def units(want) -> list:
    return list(want) if isinstance(want, list) and want else [want]


def zeroed(value):
    """Numbers to 0, lists emptied, names, booleans and None kept."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return 0
    if isinstance(value, list):
        return []
    return {k: zeroed(v) for k, v in value.items()}


def renamed(value, names: list[str]):
    """``value`` with one name, or one list, replaced at a time: by each name, or by [] and by
    a list of one name."""
    if isinstance(value, str):
        yield from names
    elif isinstance(value, list):
        yield []
        yield from ([n] for n in names)
    elif isinstance(value, dict):
        for key, item in value.items():
            for other in renamed(item, names):
                yield {**value, key: other}


def constants(unit, wants: list) -> list:
    """Every constant unit this test tries on a group whose reference answers are ``wants``."""
    pool = [u for want in wants for u in units(want)]
    names = sorted(enum_names(unit) | {s for want in wants for s in strings(want)})
    counts = Counter(json.dumps(u, sort_keys=True) for u in pool)
    common = [json.loads(text) for text, n in counts.items() if n > 1]
    tried = [*EMPTY, *names, *common]
    for unit_value in pool:
        tried += [zeroed(unit_value), *renamed(zeroed(unit_value), names)]
    unique = {json.dumps(c, sort_keys=True): c for c in tried}
    return list(unique.values())


@pytest.fixture
def named_inputs(monkeypatch):
    """Each case's child gets a file holding only the case's id (the answers a runner writes
    are all the grader judges; the reference's run it would read is not needed to write a
    constant)."""

    def write(unit, case, golden, trace_doc, path):
        path.write_text(case.id, encoding="utf-8")
        return path

    monkeypatch.setattr(case_runs, "_write_case_input", write)


def constant_runner(unit, cases, constant, whole: bool):
    """A runner whose every child writes ``constant`` as its answers: repeated for each item
    of a list answer (the length the case's reference has), or as the whole answer."""
    wants = {c.id: load_golden(unit, c)["answer"] for c in cases}

    def run(lab, files, path, argv, limits, script=None):
        want = wants[Path(path).read_text(encoding="utf-8")]
        listed = isinstance(want["answers"], list) and want["answers"] and not whole
        answers = [constant] * len(want["answers"]) if listed else constant
        doc = {"function": want["function"], "answers": answers}
        return ChildResult(0, "", "", False, json.dumps(doc).encode(), "test")

    return run


def graded(unit, cases, runner):
    return grade_submission(
        unit, Submission({}), cases=[c.id for c in cases], runner=runner, jobs=1
    )


@pytest.mark.parametrize("unit_id", unit_ids())
def test_no_constant_earns_on_any_kind_of_script_case(unit_id, named_inputs):
    unit = load_unit(unit_id)
    earned = []
    for (_, function, hidden), cases in script_sets(unit).items():
        wants = [load_golden(unit, c)["answer"]["answers"] for c in cases]
        listed = any(isinstance(w, list) and w for w in wants)
        tries = [(c, False) for c in constants(unit, wants)]
        tries += [(c, True) for c in EMPTY] if listed else []
        for constant, whole in tries:
            report = graded(unit, cases, constant_runner(unit, cases, constant, whole))
            if report.score > 0:
                shown = json.dumps(constant)[:80] + (" (whole answer)" if whole else "")
                earned.append(
                    f"{function} ({'hidden' if hidden else 'public'}): {shown} "
                    f"earns {report.score} of {report.max_score}"
                )
    assert earned == [], "\n".join(earned)


def test_a_constant_diagnosis_is_told_why_it_earns_nothing(named_inputs):
    """The feedback names the function and the kind of mistake, in the grader's own words."""
    unit = load_unit("unit09")
    cases = script_sets(unit)[("measure_check.py", "diagnose", True)]
    constant = {"cause": "OVERLOAD", "also": []}
    report = graded(unit, cases, constant_runner(unit, cases, constant, whole=False))
    assert report.score == 0
    told = {
        c.id
        for c in report.cases
        if c.feedback
        == "different answer from the reference: diagnose() in measure.py: across the runs it "
        "is graded on, its answers match the reference's no more often than one fixed answer "
        "would, and an answer that does not depend on the run earns nothing"
    }
    # the runs whose reference it equals are told why; the others keep their own diagnosis
    assert told == {c.id for c in cases if load_golden(unit, c)["answer"]["answers"] == constant}
    assert len(told) == 2


def answers_runner(unit, answers: dict):
    """A runner whose child for case ``c`` writes ``answers[c]`` (the script's whole output)."""

    def run(lab, files, path, argv, limits, script=None):
        doc = answers[Path(path).read_text(encoding="utf-8")]
        return ChildResult(0, "", "", False, json.dumps(doc).encode(), "test")

    return run


@pytest.mark.parametrize("unit_id", unit_ids())
def test_the_reference_answers_still_earn_every_point(unit_id, named_inputs):
    unit = load_unit(unit_id)
    for cases in script_sets(unit).values():
        right = {c.id: load_golden(unit, c)["answer"] for c in cases}
        report = graded(unit, cases, answers_runner(unit, right))
        assert report.score == report.max_score > 0, unit_id


def test_a_diagnosis_wrong_on_one_run_keeps_the_points_of_the_others(named_inputs):
    """The guard takes nothing from answers that compute: one wrong cause costs that case."""
    unit = load_unit("unit09")
    cases = script_sets(unit)[("measure_check.py", "diagnose", True)]
    answers = {c.id: load_golden(unit, c)["answer"] for c in cases}
    wrong = cases[0]
    answers[wrong.id] = {"function": "diagnose", "answers": {"cause": "NONE", "also": []}}
    report = graded(unit, cases, answers_runner(unit, answers))
    assert report.score == report.max_score - wrong.points
