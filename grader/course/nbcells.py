"""Building blocks for nbgrader source notebooks: cells with nbgrader metadata.

Unit notebook builders (``labs/<unit>/notebook/build_notebook.py``) assemble their cells from
these, so every unit's notebook uses the same metadata, point notes and hand-in of answers.
"""

from __future__ import annotations

from nbformat.v4 import new_code_cell, new_markdown_cell

from .nbscores import ANSWERS_MIME


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


def test_code(grade_id, points, what, source, hand_in: tuple[str, ...] = ()):
    """An autograder test cell (read-only for students).

    ``what`` is "checked item。local check;" for the cell's first-line comment. ``source`` is
    the local check the student sees; the cell then hands ``hand_in`` (answer variable names) to
    the grader, which scores the cell outside the kernel with the unit's ``CHECKS``
    (``grader.course.nbscores``, at autograding; the student's own copy runs the local check
    only).
    """
    item, _, local = what.partition("。")
    note = f"{item}({points} 分)。{local}"
    if hand_in:
        note += "评分器在笔记本之外核对交出的答案。"
    source = f"# {note}\n{source.strip()}"
    if hand_in:
        source += "\n\nhand_in(" + ", ".join(f"{name}={name}" for name in hand_in) + ")"
    return new_code_cell(source, metadata=_meta(grade_id, grade=True, locked=True, points=points))


def manual_answer(grade_id, points, source):
    """A manually graded written answer; the model answer sits in the solution region."""
    return new_markdown_cell(
        source.strip(), metadata=_meta(grade_id, solution=True, grade=True, points=points)
    )


# Appended to each unit's setup cell: how a test cell hands its answers to the grader.
HAND_IN = f'''
def hand_in(**answers):
    """交出答案:评分时,评分器在笔记本之外把它们和答案核对(这里不做比较,也拿不到答案)。"""
    from IPython.display import display

    names = ", ".join(answers)
    display({{"{ANSWERS_MIME}": answers, "text/plain": f"已交出:{{names}}"}}, raw=True)
'''.strip()
