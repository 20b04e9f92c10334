"""Unit 09's lesson page: every number and figure from runs made at build time.

Site plug-in (docs/units.md, "Site"): ``infralab site build`` calls ``lesson_context(unit)``.
The runs are in ``lesson_runs.py`` (the lab's exercise scripts and the reference policies, all
small and fast, so nothing is cached) and ``lesson_serve.py`` (one ``infralab serve`` session,
cached in ``lesson_serve.json``), the figure in ``lesson_figures.py``; claims about the
runs sit in lesson.html.j2 next to the sentences that make them.
"""

from __future__ import annotations

from pathlib import Path

from markupsafe import Markup

from grader.sitebuild.plugins import load_module
from grader.sitebuild.runs import device
from grader.units import Unit

HERE = Path(__file__).resolve().parent
runs = load_module(HERE / "lesson_runs.py")
figures = load_module(HERE / "lesson_figures.py")
text = load_module(HERE / "lesson_text.py")
serve = load_module(HERE / "lesson_serve.py")  # one real serving session, cached


def lesson_context(unit: Unit) -> dict:
    buf = runs.buffer(unit)
    return {
        "dev": device(unit).to_json(),
        "buf": buf,
        "buffer_chart": Markup(figures.buffer_figure(buf)),
        "cancel": runs.cancel_log(unit),
        "prefix": runs.prefix(unit),
        "tail": runs.tail(unit),
        "served": serve.cached(unit),
        "why_zh": text.why_zh,
        "label_zh": text.label_zh,
        "label_value": text.label_value,
        "load_zh": text.load_zh,
    }
