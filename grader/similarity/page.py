"""The similarity report: ``similarity.html`` for reading, ``pairs.csv`` for sorting.

    write(comparison, out) -> [html_path, csv_path]

Contracts:

- The CSV holds every pair, most similar first: both names, both shares (0 to 1, three
  decimals), the shared filtered characters and ``yes``/``no`` for flagged. Names pass
  ``cohort_csv.neutralise``, so none reads as a spreadsheet formula.
- The page lists the flagged pairs, then shows the editable files of the first
  ``DETAILS_SHOWN`` side by side with the shared code marked, then the closest pairs below
  the threshold. Every piece of submitted text
  goes through ``servesim.htmlsafe.text``; the page has no script.
- Both texts are made before anything is written; each file is then written atomically (0600,
  in a 0700 folder: the report names students), so a reader sees a whole old or new file.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from servesim.htmlsafe import text as esc

from ..grading.cohort_csv import neutralise
from ..jsonio import write_text_atomic
from ..units import UnitError
from .detect import MIN_SHARED, Comparison, FileMatch, Pair

HTML_NAME, CSV_NAME = "similarity.html", "pairs.csv"
HEADER = ["submission_a", "submission_b", "similarity_a", "similarity_b", "shared", "flagged"]
CLOSEST_SHOWN = 20  # unflagged pairs listed on the page (the CSV has them all)
DETAILS_SHOWN = 50  # flagged pairs whose code the page shows (a class of copies stays readable)
STYLE = """
body { font: 16px/1.5 system-ui, sans-serif; color: #1f2328; background: #fff; margin: 0; }
main { max-width: 110rem; margin: 0 auto; padding: 1rem; }
table { border-collapse: collapse; margin: 1rem 0; }
th, td { border: 1px solid #857f73; padding: .25rem .5rem; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.sides { display: grid; grid-template-columns: repeat(auto-fit, minmax(22rem, 1fr)); gap: 1rem; }
figure { margin: 0; min-width: 0; }
pre { overflow: auto; max-height: 40rem; border: 1px solid #857f73; padding: .5rem;
      font: 13px/1.4 ui-monospace, monospace; background: #f6f6f4; }
mark { background: #ffe08a; color: #1f2328; }
a { color: #1d5fa8; }
"""


def write(comparison: Comparison, out: Path) -> list[Path]:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UnitError(f"--out {out}: exists and is not a folder")
    html_text, csv_text = page_html(comparison), pairs_csv(comparison)
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(out, 0o700)
    written = [out / HTML_NAME, out / CSV_NAME]
    for path, text in zip(written, (html_text, csv_text)):
        write_text_atomic(path, text, mode=0o600)
    return written


def pairs_csv(comparison: Comparison) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(HEADER)
    for pair in comparison.pairs:
        shares = [f"{pair.similarity_a:.3f}", f"{pair.similarity_b:.3f}"]
        flagged = "yes" if pair.flagged else "no"
        writer.writerow([neutralise(pair.a), neutralise(pair.b), *shares, pair.shared, flagged])
    return buffer.getvalue()


def page_html(comparison: Comparison) -> str:
    flagged = comparison.flagged
    closest = [p for p in comparison.pairs if not p.flagged and p.shared][:CLOSEST_SHOWN]
    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>Similar submissions: {esc(comparison.unit)}</title>\n<style>{STYLE}</style>\n"
        f"</head>\n<body>\n<main>\n<h1>Similar submissions: {esc(comparison.unit)}</h1>\n",
        _summary(comparison),
        "<h2>Flagged pairs</h2>\n",
        _table(flagged, "flagged", "Flagged pairs, most similar first")
        if flagged
        else "<p>No pair reaches the threshold.</p>\n",
    ]
    for number, pair in enumerate(flagged[:DETAILS_SHOWN], 1):
        parts.append(_details(number, pair))
    if len(flagged) > DETAILS_SHOWN:
        parts.append(
            f"<p>The code of the first {DETAILS_SHOWN} flagged pairs is shown above; "
            f"{CSV_NAME} lists all {len(flagged)}.</p>\n"
        )
    parts.append("<h2>Closest pairs below the threshold</h2>\n")
    parts.append(
        _table(closest, None, "Closest pairs that are not flagged")
        if closest
        else "<p>No other pair shares code beyond the starter.</p>\n"
    )
    parts.append("</main>\n</body>\n</html>\n")
    return "".join(parts)


def _summary(comparison: Comparison) -> str:
    count, pairs = len(comparison.names), len(comparison.pairs)
    return (
        f"<p>{count} submissions, {pairs} pairs compared; {len(comparison.flagged)} flagged. "
        "A submission's share is the part of its own code (the starter's given code and stubs "
        "excluded) that the other submission holds too, after variable, function and string "
        "names are set aside. A pair is flagged when either share is at least "
        f"{comparison.threshold:.0%} and the shared code is at least {MIN_SHARED} characters "
        "(names and spaces not counted).</p>\n"
    )


def _table(pairs: list[Pair] | tuple[Pair, ...], link: str | None, caption: str) -> str:
    rows = []
    for number, pair in enumerate(pairs, 1):
        names = f"{esc(pair.a)} and {esc(pair.b)}"
        if link and number <= DETAILS_SHOWN:
            names = f'<a href="#{link}-{number}">{names}</a>'
        rows.append(
            f"<tr><td>{names}</td><td class=num>{pair.similarity_a:.0%}</td>"
            f"<td class=num>{pair.similarity_b:.0%}</td><td class=num>{pair.shared}</td></tr>\n"
        )
    return (
        f"<table>\n<caption>{esc(caption)}</caption>\n<thead><tr><th scope=col>Pair</th>"
        "<th scope=col>Share of first</th><th scope=col>Share of second</th>"
        f"<th scope=col>Shared characters</th></tr></thead>\n<tbody>\n{''.join(rows)}</tbody>\n"
        "</table>\n"
    )


def _details(number: int, pair: Pair) -> str:
    head = (
        f'<section aria-labelledby="flagged-{number}">\n<h3 id="flagged-{number}">'
        f"{esc(pair.a)} and {esc(pair.b)}: {pair.similarity_a:.0%} and "
        f"{pair.similarity_b:.0%}</h3>\n"
    )
    return head + "".join(_file(number, pair, match) for match in pair.files) + "</section>\n"


def _file(number: int, pair: Pair, match: FileMatch) -> str:
    sides = (
        (pair.a, match.text_a, match.spans_a),
        (pair.b, match.text_b, match.spans_b),
    )
    figures = "".join(
        f"<figure>\n<figcaption>{esc(who)}: {esc(match.name)}</figcaption>\n"
        f'<pre tabindex="0"><code>'
        f"{_marked(text, spans)}</code></pre>\n</figure>\n"
        for who, text, spans in sides
    )
    return f"<h4>{esc(match.name)}</h4>\n<div class=sides>\n{figures}</div>\n"


def _marked(text: str, spans) -> str:
    """``text`` escaped, with each shared span in a ``<mark>``."""
    out, done = [], 0
    for given_start, given_end in sorted(spans):
        start, end = max(given_start, done), min(given_end, len(text))
        if start >= end:
            continue
        out += [esc(text[done:start]), "<mark>", esc(text[start:end]), "</mark>"]
        done = end
    out.append(esc(text[done:]))
    return "".join(out)
