"""Issue 50 for unit 09's notebook: deliverable 1 (exercise 31.10) runs the lab's
``traces/ex31-10.json`` and deliverables 2 and 3 (exercises 31.12 and 31.13) the situations of
``tailruns.py`` with the numbers of the lab's ``tailruns.json``; each student draws both again,
so the answer keys and the numbers the notebook's own cells compute are the student's own."""

from __future__ import annotations

import json

from labtools import copy_lab
from varianttools import expected_key, notebook_answers, variant_of, write_secret

from grader.course import nbcheck
from grader.units import load_unit
from grader.variants import nbkeys

UNIT = load_unit("unit09")
SOURCE = UNIT.unit_dir / "notebook" / "unit09.ipynb"
TRACE = "traces/ex31-10.json"


def read_rate(unit) -> float:
    doc = json.loads((unit.lab_dir / TRACE).read_text(encoding="utf-8"))
    return doc["requests"][0]["readBytesPerS"]


def notebook_d1(lab) -> dict:
    return notebook_answers(SOURCE, lab, ("setup", "d1_run", "d1_answer"), "d1")


D23_CELLS = ("setup", "d2_run", "d2_answer", "d2_plan_answer", "d3_run", "d3_answer")
D23_ANSWERS = "[d2, d2_plan, d2_denominators, d3, d3_after]"


def notebook_d23(lab) -> dict:
    """Deliverables 2 and 3 as the notebook's cells compute them in ``lab``, shaped as the
    ``evidence`` and ``diagnosis`` keys are."""
    d2, plan, denominators, d3, after = notebook_answers(SOURCE, lab, D23_CELLS, D23_ANSWERS)
    evidence = {"figures": d2, "plan": plan, "denominators": denominators}
    return {"evidence": evidence, "diagnosis": {"causes": d3, "after": after}}


def test_two_students_get_their_own_fill_key_and_the_fixed_key_is_the_chapters():
    fixed = nbcheck.answer_key(UNIT, "fill")
    assert (fixed["read_kib_s"], fixed["fill_s_formula"], fixed["pause_s"]) == (4, 8, 7.96875)
    keys = {}
    for student in ("s001", "s002"):
        variant = variant_of("unit09", student)
        assert nbkeys.key_unit(variant, "fill") is variant  # computed on the student's lab
        keys[student] = nbcheck.answer_key(variant, "fill")
        assert keys[student]["read_kib_s"] * 1024 == read_rate(variant) != read_rate(UNIT)
        assert TRACE in nbkeys.own_files(variant)  # what autograding lays over the lab
    one, two = keys["s001"], keys["s002"]
    assert one != two and fixed not in (one, two)
    assert {f for f in one if one[f] != two[f]} >= {"pause_s", "read_kib_s", "fill_s_formula"}


def test_the_notebooks_cells_compute_each_students_key_in_their_lab(tmp_path):
    """In each student's lab folder (the reference files in their place) the notebook's run and
    model solution give the key the project's command computes for them, and its final assert
    (the fill time from the run's own numbers) holds; in the shipped lab, the fixed key."""
    secret = write_secret(tmp_path)
    for student in ("s001", "s002"):
        lab = copy_lab(tmp_path / student, True, variant_of("unit09", student))
        assert notebook_d1(lab) == expected_key("unit09", "fill", student, secret), student
    fixed = copy_lab(tmp_path / "fixed", True, UNIT)
    assert notebook_d1(fixed) == nbcheck.answer_key(UNIT, "fill")


CAUSES = {
    "light": "none",
    "overload": "overload",
    "long prompts": "prefill blocking decode",
    "slow clients": "slow clients",
}


def test_two_students_get_their_own_tail_keys_and_the_fixed_keys_are_the_courses():
    """Deliverables 2 and 3: each student's ``tailruns.json`` is their own, so is every
    situation's figures in their keys (none equal to the other student's or the course's),
    while every situation keeps its cause and 31.12's plan stays the course's."""
    fixed = {case: nbcheck.answer_key(UNIT, case) for case in ("evidence", "diagnosis")}
    keys = {}
    for student in ("s001", "s002"):
        variant = variant_of("unit09", student)
        assert "tailruns.json" in nbkeys.own_files(variant)  # what autograding lays over the lab
        for case in ("evidence", "diagnosis"):
            assert nbkeys.key_unit(variant, case) is variant  # computed on the student's lab
        keys[student] = {case: nbcheck.answer_key(variant, case) for case in fixed}
    for key in (fixed, *keys.values()):
        causes = key["diagnosis"]["causes"]
        assert {name: c["cause"] for name, c in causes.items()} == CAUSES
        assert key["evidence"]["plan"] == fixed["evidence"]["plan"]
    one, two = keys["s001"], keys["s002"]
    for name in CAUSES:
        figures = [k["diagnosis"]["causes"][name] for k in (fixed, one, two)]
        tails = {(f["p99_wait_ms"], f["p99_itl_ms"]) for f in figures}
        assert len(tails) == 3, (name, figures)
    for cause in ("overload", "slow clients"):
        runs = [k["evidence"]["figures"][cause] for k in (fixed, one, two)]
        assert len({json.dumps(run["waiting_share"]) for run in runs}) == 3, (cause, runs)
    after = [k["diagnosis"]["after"] for k in (fixed, one, two)]
    assert after[0] != after[1] != after[2] != after[0]


def test_the_notebooks_cells_compute_each_students_tail_keys_in_their_lab(tmp_path):
    """In each student's lab folder (the reference files in their place) the notebook's runs
    and model solutions of deliverables 2 and 3 give the keys the project's command computes
    for them; in the shipped lab, the fixed keys."""
    secret = write_secret(tmp_path)
    for student in ("s001", "s002"):
        lab = copy_lab(tmp_path / student, True, variant_of("unit09", student))
        expected = {
            case: expected_key("unit09", case, student, secret)
            for case in ("evidence", "diagnosis")
        }
        assert notebook_d23(lab) == expected, student
    fixed = copy_lab(tmp_path / "fixed", True, UNIT)
    expected = {case: nbcheck.answer_key(UNIT, case) for case in ("evidence", "diagnosis")}
    assert notebook_d23(fixed) == expected
