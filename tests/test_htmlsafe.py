"""``servesim.htmlsafe``, the one escaper: its contracts, the site's Jinja environment routed
through it, and no other module of the project escaping by hand (a static scan of the sources,
templates and shipped scripts). The pages in a browser: tests/site/test_hostile_pages.py."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from servesim import htmlsafe

from grader.grading import leaderboard
from grader.sitebuild import build
from grader.units import REPO_ROOT

HOSTILE = [
    "</script><script>alert(1)</script>",
    "<!--<script>",
    "]]>",
    "'\"",
    "a\u2028b\u2029c",
    "&amp; &lt; <img src=x onerror=alert(1)>",
    "</SCRIPT",
    "",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_text_has_no_markup_and_reads_back(value):
    out = htmlsafe.text(value)
    assert not set("<>\"'") & set(out)
    assert re.fullmatch(r"([^&]|&(amp|lt|gt|#34|#39);)*", out)

    class Reader(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.seen, self.attrs = [], []

        def handle_data(self, data):
            self.seen.append(data)

        def handle_starttag(self, tag, attrs):
            self.attrs.append((tag, attrs))

    reader = Reader()
    reader.feed(f"<p title='{out}' lang=\"{out}\">{out}</p>")
    reader.close()
    assert "".join(reader.seen) == value
    assert reader.attrs == [("p", [("title", value), ("lang", value)])]


@pytest.mark.parametrize("value", [*HOSTILE, {"k<": ["</script>", 1, None, 2.5]}, [HOSTILE]])
def test_script_data_is_json_that_cannot_leave_its_block(value):
    out = htmlsafe.script_data(value)
    assert json.loads(out) == value
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in out


def test_the_site_escapes_every_value_through_htmlsafe():
    env = build._environment(None)
    assert env.finalize is build._through_htmlsafe
    template = env.from_string('<p title="{{ v }}">{{ v }}{{ v|squash }}</p>')
    for value in HOSTILE:
        want = htmlsafe.text(value)
        assert template.render(v=value) == f'<p title="{want}">{want}{want}</p>'


# Escaping by hand: an escape function other than htmlsafe's, replacing one of the characters
# that matter, writing one of their character references, or JSON made script-safe in place.
HAND_ESCAPING = re.compile(
    r"\bhtml\.escape\b|^\s*from html import|^\s*import html\s*$|markupsafe import[^\n]*\bescape\b"
    r"|markupsafe\.escape|\bsaxutils\b|Markup\([^)\n]*\)\s*(\.format\(|%)"
    r"|\.replace\(\s*['\"](<|>|&|</)['\"]"
    r"|&(lt|gt|amp|quot|apos|#34|#39|#x27|#x22|#60|#62|#38|#x3c|#x3e|#x26);"
    r"|\\\\u003c|<\\\\/",
    re.MULTILINE | re.IGNORECASE,
)
SOURCE_FOLDERS = ("servesim", "grader", "realdevice", "labs", "starter", "solutions", "scripts")
THE_ONE = REPO_ROOT / "servesim" / "htmlsafe.py"
# Templates hand every value to htmlsafe (finalize); these would bypass it or escape again.
TEMPLATE_BYPASS = re.compile(r"\|\s*(safe|e|escape|forceescape)\b|autoescape\s+false")
# The pages' own scripts put text in the page only as text (textContent, setAttribute).
SCRIPT_AS_HTML = re.compile(r"\b(innerHTML|outerHTML|insertAdjacentHTML|document\.write)\b")


def _sources() -> list:
    return [
        path
        for folder in SOURCE_FOLDERS
        for path in sorted((REPO_ROOT / folder).rglob("*.py"))
        if path != THE_ONE and "__pycache__" not in path.parts
    ]


def _found(pattern: re.Pattern, paths, root=REPO_ROOT) -> list[str]:
    """``file:line: match`` for every match of ``pattern`` in ``paths``."""
    found = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{path.relative_to(root)}:{line}: {match.group(0)!r}")
    return found


def test_the_scans_catch_hand_escaping(tmp_path):
    samples = {
        "a.py": "import html\nx = html.escape(s)\n",
        "b.py": "from markupsafe import Markup, escape\n",
        "c.py": 'json.dumps(d).replace("</", "<\\\\/")\n',
        "d.py": 's.replace("&", "&amp;")\n',
        "e.py": "Markup('<b>{}</b>').format(s)\n",
        "f.py": 'x = "\\\\u003c"\n',
    }
    for name, text in samples.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    found = _found(HAND_ESCAPING, sorted(tmp_path.glob("*.py")), root=tmp_path)
    assert {line.split(":")[0] for line in found} == set(samples)
    assert TEMPLATE_BYPASS.search("{{ x|safe }}") and TEMPLATE_BYPASS.search("{{ x | e }}")
    assert SCRIPT_AS_HTML.search("td.innerHTML = s")


def test_no_module_escapes_by_hand():
    assert THE_ONE.is_file()
    assert _found(HAND_ESCAPING, _sources()) == []


def test_no_template_bypasses_the_escaper_and_no_script_writes_markup():
    templates = [
        *sorted((REPO_ROOT / "site" / "templates").glob("*.html")),
        *sorted((REPO_ROOT / "labs").glob("*/*.j2")),
        REPO_ROOT / "servesim" / "runview" / "page.html",
    ]
    scripts = [
        *sorted((REPO_ROOT / "site" / "static").glob("*.js")),
        *sorted((REPO_ROOT / "servesim").rglob("*.js")),
    ]
    assert templates and scripts
    assert _found(TEMPLATE_BYPASS, templates) == []
    assert _found(SCRIPT_AS_HTML, scripts) == []


def test_the_doc_names_tests_that_exist():
    """docs/sandbox.md's "One escaper for every page" names only files and tests that exist."""
    doc = (REPO_ROOT / "docs" / "sandbox.md").read_text(encoding="utf-8")
    section = doc.split("### One escaper for every page", 1)[1].split("\n#", 1)[0]
    files = sorted(set(re.findall(r"`(tests/[\w/]+\.py)", section)))
    names = set(re.findall(r"`(test_\w+)`", section))
    assert files and names
    sources = "\n".join((REPO_ROOT / f).read_text(encoding="utf-8") for f in files)
    assert [n for n in names if f"def {n}(" not in sources] == []
    assert "servesim/htmlsafe.py" in section and THE_ONE.is_file()


def test_a_leaderboard_entry_carries_no_string_of_the_submission():
    """The project writes no leaderboard page (Gradescope draws it from results.json); what it
    hands Gradescope holds the grader's own names and numbers only, whatever the metrics hold."""
    hostile = HOSTILE[0]
    metrics = [
        {"goodput": hostile, "goodputMax": hostile, "p99TtftMs": hostile, "ttftMaxMs": 9.0,
         "referenceGoodput": hostile},
        {"goodput": 1.5, "goodputMax": 2.0, "p99TtftMs": 3.0, "ttftMaxMs": 9.0, hostile: hostile,
         "referenceGoodput": 1.5},
    ]  # fmt: skip
    board = leaderboard.entries(metrics)
    names = [
        leaderboard.LEADERBOARD_GOODPUT,
        leaderboard.LEADERBOARD_RELATIVE,
        leaderboard.LEADERBOARD_P99_TTFT,
    ]
    assert [entry["name"] for entry in board] == names
    assert [entry["value"] for entry in board] == [0.75, 100.0, 3.0]  # a string is no value
    assert all(set(entry) == {"name", "value", "order"} for entry in board)
    assert all(type(entry["value"]) is float for entry in board)
