"""Rules of HTML and accessibility that a validator or a screen reader needs, checked on every
built page without a browser: what html5lib's strict parse (test_build.py) does not cover."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import html5lib
import pytest

from grader.sitebuild import lang
from grader.sitebuild.math import block, inline

LABELABLE = {"button", "meter", "output", "progress", "select", "textarea", "input"}
IDREFS = ("for", "aria-labelledby", "aria-describedby", "aria-controls", "headers", "list")


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def _tree(page: Path):
    return html5lib.parse(page.read_text(encoding="utf-8"), namespaceHTMLElements=False)


def _tag(element) -> str:
    return element.tag.rsplit("}", 1)[-1] if isinstance(element.tag, str) else ""


def _labelable(element) -> bool:
    return _tag(element) in LABELABLE and element.get("type") != "hidden"


def _live(element):
    """``element`` and its descendants, less <template> contents (inert until cloned)."""
    yield element
    for child in element:
        if _tag(child) != "template":
            yield from _live(child)


def test_ids_are_unique_and_every_id_reference_resolves(built_site):
    site, _ = built_site
    problems = []
    for page in _pages(site):
        root = _tree(page)
        ids = Counter(e.get("id") for e in _live(root) if e.get("id"))
        problems += [f"{page.name}: id {i!r} used {n} times" for i, n in ids.items() if n > 1]
        for element in _live(root):
            for attr in IDREFS:
                for ref in (element.get(attr) or "").split():
                    if ref not in ids:
                        problems.append(f"{page.relative_to(site)}: {attr}={ref!r} names no id")
    assert not problems, "\n".join(problems)


def test_a_label_labels_one_control(built_site):
    """A <label> may hold one labelable element (W3C validator: "The label element may contain
    at most one button, input, meter, output, progress, select, or textarea descendant"), and
    one with ``for`` may hold no other than the one it names."""
    site, _ = built_site
    problems, labels = [], 0
    for page in _pages(site):
        for label in _tree(page).iter("label"):
            labels += 1
            inside = [e for e in label.iter() if e is not label and _labelable(e)]
            target = label.get("for")
            if len(inside) > 1 or (target and any(e.get("id") != target for e in inside)):
                names = [_tag(e) for e in inside]
                problems.append(f"{page.relative_to(site)}: <label> holds {names}")
    assert labels >= 10
    assert not problems, "\n".join(problems)


def test_every_formula_has_a_text_alternative(built_site):
    site, _ = built_site
    formulas, bare = 0, []
    for page in _pages(site):
        for math in _tree(page).iter("{http://www.w3.org/1998/Math/MathML}math"):
            formulas += 1
            if not (math.get("alttext") or "").strip():
                bare.append(f"{page.relative_to(site)}: {''.join(math.itertext())[:40]}")
    assert formulas > 100
    assert not bare, f"<math> without alttext: {bare[:5]}"


def test_formulas_carry_their_latex_as_alttext():
    assert 'alttext="\\rho=\\lambda/\\mu"' in inline(r"\rho=\lambda/\mu")
    shown = str(block(r"\frac{a}{b}  <  c", "31.1"))
    assert 'alttext="\\frac&#123;a&#125;&#123;b&#125; &lt; c"' in shown
    tree = html5lib.parse(shown, namespaceHTMLElements=False)
    math = next(tree.iter("{http://www.w3.org/1998/Math/MathML}math"))
    assert math.get("alttext") == r"\frac{a}{b} < c"  # what a screen reader gets


def test_table_headers_have_text(built_site):
    """A header cell holding only a formula has no name for axe (empty-table-header)."""
    site, _ = built_site
    empty = []
    for page in _pages(site):
        for th in _tree(page).iter("th"):
            text = "".join(
                t for e in th.iter() if not _tag(e).endswith("math") for t in [e.text or ""]
            )
            if not text.strip() and not th.get("aria-label"):
                empty.append(f"{page.relative_to(site)}: {''.join(th.itertext())!r}")
    assert not empty, empty


def _unmarked_text(element, skip: bool = False):
    """Text of ``element`` outside code, formulas, figures and non-Chinese ``lang``."""
    tag = _tag(element)
    skip = skip or tag in lang.SKIP or not (element.get("lang") or "zh").startswith("zh")
    if not skip and element.text:
        yield element.text
    for child in element:
        yield from _unmarked_text(child, skip)
        if not skip and child.tail:
            yield child.tail


def test_english_phrases_in_chinese_pages_are_marked(built_site):
    site, _ = built_site
    left, marked = [], 0
    for page in _pages(site):
        root = _tree(page)
        assert root.get("lang") == "zh-CN"
        marked += sum(1 for e in root.iter() if e.get("lang") == "en")
        for text in _unmarked_text(root):
            left += [f"{page.relative_to(site)}: {m.group()}" for m in lang._PHRASE.finditer(text)]
    assert not left, left
    assert marked >= 10
    unit08 = (site / "unit08" / "index.html").read_text(encoding="utf-8")
    assert '（<span lang="en">coordinated omission</span>）' in unit08
    index = (site / "index.html").read_text(encoding="utf-8")
    assert re.search(r'<p class="unit-en" lang="en">Unit 08', index)


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        (
            "<p>菜单 Run → Run All Cells。</p>",
            '<p>菜单 Run → <span lang="en">Run All Cells</span>。</p>',
        ),
        (
            "<p>协调遗漏（coordinated omission）</p>",
            '<p>协调遗漏（<span lang="en">coordinated omission</span>）</p>',
        ),
        (
            "<p>decode batch 与 TTFT、prefill token</p>",
            "<p>decode batch 与 TTFT、prefill token</p>",
        ),
        (
            "<p>Íñigo Goiri, Saeed Maleki</p>",
            '<p><span lang="en">Íñigo Goiri, Saeed Maleki</span></p>',
        ),
        ('<p title="one two three">x</p>', '<p title="one two three">x</p>'),
        (
            "<code>one two three</code><pre>a b c</pre>",
            "<code>one two three</code><pre>a b c</pre>",
        ),
        ("<svg><title>one two three</title></svg>", "<svg><title>one two three</title></svg>"),
        ('<p lang="en">one <b>two</b> three</p>', '<p lang="en">one <b>two</b> three</p>'),
        (
            '<div lang="zh-CN"><p>one two three</p></div>',
            '<div lang="zh-CN"><p><span lang="en">one two three</span></p></div>',
        ),
        ("<p>AT &amp; T one two</p>", '<p>AT &amp; <span lang="en">T one two</span></p>'),
        (
            '<br><input lang="en"><p>one two three</p>',
            '<br><input lang="en"><p><span lang="en">one two three</span></p>',
        ),
    ],
)
def test_mark_english(html, expected):
    assert lang.mark_english(html) == expected
