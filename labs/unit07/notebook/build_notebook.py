"""Write ``unit07.ipynb``, the unit's nbgrader source notebook, from the cells in ``cells.py``.

Run ``python labs/unit07/notebook/build_notebook.py`` after editing; a test checks that the
committed notebook is what this script writes. The notebook is nbgrader's *source* version:
solution regions and model answers are removed by ``nbgrader generate_assignment``.

Autograder tests never hold expected numbers, and the notebook's kernel never sees one: a test
cell hands its answers in (``hand_in``) and the grader judges them outside the kernel with the
checks in ``answer_keys.py`` (``CHECKS``), against answer keys computed at grading time.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_notebook

from grader.plugins import load_file

HERE = Path(__file__).resolve().parent
UNIT = "unit07"
NOTEBOOK = HERE / f"{UNIT}.ipynb"


def build() -> nbformat.NotebookNode:
    notebook = new_notebook(
        cells=load_file(HERE / "cells.py").cells(),
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


def render() -> str:
    return nbformat.writes(build()) + "\n"


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
