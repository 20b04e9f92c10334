"""Write ``unit08.ipynb``, the unit's nbgrader source notebook, from the cells in ``cells.py``.

Run ``python labs/unit08/notebook/build_notebook.py`` after editing (``--check``: is the committed
one current?); the shared builder is ``grader/course/nbbuild.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grader.course.nbbuild import Builder

BUILDER = Builder("unit08", Path(__file__).resolve().parent)
NOTEBOOK = BUILDER.notebook
answer_keys, build, render = BUILDER.answer_keys, BUILDER.build, BUILDER.render

if __name__ == "__main__":
    sys.exit(BUILDER.main())
