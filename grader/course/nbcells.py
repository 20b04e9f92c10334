"""Building blocks for nbgrader source notebooks: cells with nbgrader metadata.

Unit notebook builders (``labs/<unit>/notebook/build_notebook.py``) assemble their cells from
these, so every unit's notebook uses the same metadata, point notes and hidden-test wrapper.
"""

from __future__ import annotations

from nbformat.v4 import new_code_cell, new_markdown_cell


def _meta(grade_id, *, solution=False, grade=False, locked=False, points=None) -> dict:
    meta = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if grade:
        meta["points"] = points
    return {"nbgrader": meta}


def text(grade_id, source):
    """Locked prose."""
    return new_markdown_cell(source.strip(), metadata=_meta(grade_id, locked=True))


def locked_code(grade_id, source):
    return new_code_cell(source.strip(), metadata=_meta(grade_id, locked=True))


def answer_code(grade_id, source):
    """An autograded answer cell: the student's code replaces the solution region."""
    return new_code_cell(source.strip(), metadata=_meta(grade_id, solution=True))


def test_code(grade_id, points, what, source):
    """An autograder test cell (read-only for students; hidden region stripped on release).

    ``what`` is "checked item。local check;" for the cell's first-line comment.
    """
    item, _, local = what.partition("。")
    note = f"{item}({points} 分)。{local}"
    if "### BEGIN HIDDEN TESTS" in source:
        note += "评分时另有隐藏测试。"
    source = f"# {note}\n{source.strip()}"
    return new_code_cell(source, metadata=_meta(grade_id, grade=True, locked=True, points=points))


def manual_answer(grade_id, points, source):
    """A manually graded written answer; the model answer sits in the solution region."""
    return new_markdown_cell(
        source.strip(), metadata=_meta(grade_id, solution=True, grade=True, points=points)
    )


def trusted_source(unit: str) -> str:
    """``_trusted(*args)``: runs the trusted grader in a separate, isolated interpreter (-I: the
    student's folder is not on sys.path) and returns its JSON answer."""
    return f'''
def _trusted(*args):
    done = subprocess.run(
        [sys.executable, "-I", "-m", "grader.course.nbcheck", *args, "--unit", "{unit}"],
        capture_output=True, text=True,
    )
    if done.returncode != 0:
        raise RuntimeError("grading helper failed: " + done.stderr[-2000:])
    return json.loads(done.stdout)
'''.strip()


def hidden(body: str, unit: str) -> str:
    """A hidden-test region that asks the trusted grader for its answer keys."""
    return f"### BEGIN HIDDEN TESTS\n{trusted_source(unit)}\n\n{body.strip()}\n### END HIDDEN TESTS"
