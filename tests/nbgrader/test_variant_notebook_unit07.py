"""Issue 50 for unit 07's notebook: deliverables 1 (``mixed``) and 2 (``prefill-only``) run the
lab's traces, which each student draws again, so their answer keys and the numbers the
notebook's own cells compute are the student's own (deliverable 3, ``unseen``, already was)."""

from __future__ import annotations

import json

from labtools import copy_lab
from varianttools import expected_key, notebook_answers, variant_of, write_secret

from grader.course import nbcheck
from grader.units import load_unit
from grader.variants import nbkeys

UNIT = load_unit("unit07")
SOURCE = UNIT.unit_dir / "notebook" / "unit07.ipynb"
CASES = ("mixed", "prefill-only")
# The cells each deliverable's answers come from, and how they make the case's key's shape.
CELLS = {
    "mixed": ("setup", "d1_trace", "d1_run", "d1_answer"),
    "prefill-only": ("setup", "d2_trace", "d2_prediction_answer", "d2_run", "d2_answer"),
}
ANSWERS = {
    "mixed": '{"times": d1_times, "aMaxItl": d1_a_max_itl}',
    "prefill-only": '{"outputs": d2_outputs, "prediction": d2_prediction}',
}


def test_the_fixed_keys_are_the_lessons_figures():
    mixed = nbcheck.answer_key(UNIT, "mixed")
    assert mixed["aMaxItl"] == {"fcfs": 14.75, "chunked": 3.5}
    assert mixed["times"]["chunked"]["S"] == {"arrival": 4, "first": 25.75, "finish": 29.5}
    assert nbcheck.answer_key(UNIT, "prefill-only") == {
        "0.25": {"fcfs": 12.25, "chunked": 13.5},
        "0": {"fcfs": 12.0, "chunked": 12.0},
        "submissions": {"fcfs": 1, "chunked": 6},
    }


def test_two_students_get_their_own_d1_and_d2_keys():
    fixed = {case: nbcheck.answer_key(UNIT, case) for case in CASES}
    keys = {}
    for student in ("s001", "s002"):
        variant = variant_of("unit07", student)
        own = nbkeys.own_files(variant)  # what autograding lays over the student's lab
        for case in CASES:
            assert nbkeys.key_unit(variant, case) is variant  # computed on the student's lab
            assert f"traces/{case}.json" in own and f"tests/expected/{case}.json" in own
        keys[student] = {case: nbcheck.answer_key(variant, case) for case in CASES}
    for case in CASES:
        one, two = keys["s001"][case], keys["s002"][case]
        assert one != two and fixed[case] not in (one, two), case
    one, two = keys["s001"]["mixed"], keys["s002"]["mixed"]
    assert one["aMaxItl"]["fcfs"] != two["aMaxItl"]["fcfs"]  # A's stall behind L and S


def test_the_notebooks_cells_compute_each_students_keys_in_their_lab(tmp_path):
    """In each student's lab folder (the reference files in their place) the notebook's runs
    and model solutions give the keys the project's command computes for them, and the model
    prediction of deliverable 2 (worked from the printed trace) is right; in the shipped lab,
    the fixed keys."""
    secret = write_secret(tmp_path)
    labs = {s: copy_lab(tmp_path / s, True, variant_of("unit07", s)) for s in ("s001", "s002")}
    labs["fixed"] = copy_lab(tmp_path / "fixed", True, UNIT)
    got = {}
    for who, lab in labs.items():
        for case in CASES:
            if who == "fixed":
                key = nbcheck.answer_key(UNIT, case)
            else:
                key = expected_key("unit07", case, who, secret)
            got[who, case] = answers = notebook_answers(SOURCE, lab, CELLS[case], ANSWERS[case])
            if case == "mixed":
                assert answers == key, (who, case)
            else:
                assert answers["outputs"] == key == answers["prediction"], (who, case)
    for case in CASES:
        assert len({json.dumps(got[who, case], sort_keys=True) for who in labs}) == 3, case
