"""Issue 50 for unit 09's notebook: deliverable 1 (exercise 31.10) runs the lab's
``traces/ex31-10.json``, which each student draws again, so its answer key and the numbers
the notebook's own cells compute are the student's own."""

from __future__ import annotations

import json
import subprocess
import sys

import nbformat
from labtools import copy_lab
from varianttools import expected_key, variant_of, write_secret

from grader.course import nbcheck
from grader.units import load_unit
from grader.variants import nbkeys

UNIT = load_unit("unit09")
SOURCE = UNIT.unit_dir / "notebook" / "unit09.ipynb"
TRACE = "traces/ex31-10.json"
MARK = "D1-JSON:"


def read_rate(unit) -> float:
    doc = json.loads((unit.lab_dir / TRACE).read_text(encoding="utf-8"))
    return doc["requests"][0]["readBytesPerS"]


def notebook_d1(lab) -> dict:
    """``d1`` as the notebook's own cells compute it in ``lab`` (setup, the run, the model
    solution and its final assert), run with the lab's Python as a student's kernel would."""
    nb = nbformat.read(SOURCE, as_version=4)
    found = {cell.metadata["nbgrader"]["grade_id"]: cell for cell in nb.cells}
    code = "\n\n".join(found[name].source for name in ("setup", "d1_run", "d1_answer"))
    code += f"\nprint({MARK!r} + json.dumps(d1))\n"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=lab, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.rsplit(MARK, 1)[1])


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
