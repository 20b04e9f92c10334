"""Build a unit's nbgrader source notebook from its ``cells.py`` (``labs/<unit>/notebook/``).

A unit's ``build_notebook.py`` is a few lines over :class:`Builder`. The notebook is nbgrader's
*source* version: solution regions and model answers are removed by
``nbgrader generate_assignment``. Autograder tests never hold expected numbers: their hidden
regions ask the trusted grader (``python -I -m grader.course.nbcheck``) for answer keys computed
at grading time. Model answers that quote figures compute them from the same keys, so a change to
the engine or the setup shows up as a stale notebook (a test compares the committed file).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Builder:
    unit_id: str
    folder: Path  # labs/<unit>/notebook

    @property
    def notebook(self) -> Path:
        return self.folder / f"{self.unit_id}.ipynb"

    def answer_keys(self) -> dict:
        """Every answer key of the notebook, computed with the reference solution (or remembered
        from an earlier computation on the same code and files: ``grader.course.nbcheck``)."""
        from grader.course import nbcheck
        from grader.units import load_unit

        unit = load_unit(self.unit_id)
        return {case: nbcheck.answer_key(unit, case) for case in nbcheck.answer_keys(unit)}

    def build(self, keys: dict | None = None):
        import nbformat
        from nbformat.v4 import new_notebook

        from grader.plugins import load_file

        keys = self.answer_keys() if keys is None else keys
        notebook = new_notebook(
            cells=load_file(self.folder / "cells.py").cells(keys),
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

    def render(self, keys: dict | None = None) -> str:
        import nbformat

        return nbformat.writes(self.build(keys)) + "\n"

    def main(self, argv=None) -> int:
        """Write the notebook; ``--check``: exit 1 (and say so) if the committed one is stale."""
        argv = sys.argv[1:] if argv is None else argv
        text_out = self.render()
        if argv == ["--check"]:
            path = self.notebook
            current = path.read_text(encoding="utf-8") if path.exists() else ""
            if current != text_out:
                print(f"stale: {path.name} (run build_notebook.py)", file=sys.stderr)
                return 1
            return 0
        self.notebook.write_text(text_out, encoding="utf-8")
        print(f"wrote {self.notebook.name}")
        return 0
