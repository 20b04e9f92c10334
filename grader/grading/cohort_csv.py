"""The batch's ``scores.csv``: one row per finished submission, sorted by name, deterministic.

Every cell that a spreadsheet would read as a formula (it starts with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return) is written with a leading apostrophe, so a submission's
name or an error message cannot inject one. Numbers are written by the grader itself.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise(cell: str) -> str:
    """``cell`` as a spreadsheet shows it literally (apostrophe before a formula start)."""
    return "'" + cell if cell.startswith(FORMULA_STARTS) else cell


def _num(value) -> str:
    return f"{float(value):g}"


def csv_text(parts: list[str], names: list[str], read: Callable[[str], dict | None]) -> str:
    """The CSV for ``names`` (``read`` gives a finished report or None), sorted by name.

    A report with an ``error`` has an empty score when the error was the environment's
    (``environmentError``: retried on the next run), else the score it was given (0).
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["submission", "score", "max_score", *parts, "error"])
    for name in sorted(names):
        doc = read(name)
        if doc is None:
            continue
        if doc.get("environmentError"):
            score, row_parts, most = "", [""] * len(parts), ""
        else:
            score = _num(doc["score"])
            row_parts = [_num(doc.get("parts", {}).get(p, {}).get("score", 0.0)) for p in parts]
            most = "" if doc.get("maxScore") is None else _num(doc["maxScore"])
        cells = [name, score, most, *row_parts, doc.get("error") or ""]
        writer.writerow([neutralise(str(cell)) for cell in cells])
    return buffer.getvalue()
