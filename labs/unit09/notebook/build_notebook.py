"""Write ``unit09.ipynb``, the unit's nbgrader source notebook, from the cells in ``cells.py``.

Run ``python labs/unit09/notebook/build_notebook.py`` after editing; a test checks that the
committed notebook is what this script writes. The notebook is nbgrader's *source* version:
solution regions and model answers are removed by ``nbgrader generate_assignment``.

Autograder tests never hold expected numbers: their hidden regions ask the trusted grader
(``python -I -m grader.course.nbcheck``) for answer keys computed at grading time. The model
answers to the written questions quote figures; those are computed here, from the same answer
keys, so a change to the engine or the setup shows up as a stale notebook.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_notebook

HERE = Path(__file__).resolve().parent
UNIT = "unit09"
NOTEBOOK = HERE / f"{UNIT}.ipynb"


def _module(name: str):
    from grader.plugins import load_file

    return load_file(HERE / f"{name}.py")


def answer_keys() -> dict:
    """Every answer key of the notebook, computed with the reference solution (or remembered
    from an earlier computation on the same code and files: ``grader.course.nbcheck``)."""
    from grader.course import nbcheck
    from grader.units import load_unit

    unit = load_unit(UNIT)
    return {case: nbcheck.answer_key(unit, case) for case in nbcheck.answer_keys(unit)}


def build(keys: dict | None = None) -> nbformat.NotebookNode:
    keys = answer_keys() if keys is None else keys
    notebook = new_notebook(
        cells=_module("cells").cells(keys),
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
        },
    )
    # Stable cell ids keep the committed file byte-identical across rebuilds.
    for cell in notebook.cells:
        cell["id"] = cell.metadata["nbgrader"]["grade_id"].replace("_", "-")
    nbformat.validate(notebook)
    return notebook


def render(keys: dict | None = None) -> str:
    return nbformat.writes(build(keys)) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text_out = render()
    if argv == ["--check"]:
        current = NOTEBOOK.read_text(encoding="utf-8") if NOTEBOOK.exists() else ""
        if current != text_out:
            print(f"stale: {NOTEBOOK.name} (run build_notebook.py)", file=sys.stderr)
            return 1
        return 0
    NOTEBOOK.write_text(text_out, encoding="utf-8")
    print(f"wrote {NOTEBOOK.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
