"""The similarity report (``infralab similarity``) in headless chromium: axe-core finds nothing,
as on the site, with a flagged pair's code shown and hostile text in it inert.

Uses the browser fixture and the skips of test_browser.py, and axe-core as test_accessibility.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from similarity_class.build import disguised, filled
from test_accessibility import AXE, AXE_RUN, TAGS
from test_browser import browser  # noqa: F401  (fixture)

from grader.units import REPO_ROOT, load_unit

pytest.importorskip("copydetect", reason="needs the similarity extra")
from grader.similarity import detect, page

CLASS07 = REPO_ROOT / "tests" / "similarity_class" / "unit07"
HOSTILE = "</code></pre><script>alert(1)</script><img src=x onerror=alert(2)>"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("similar")
    unit = load_unit("unit07")
    starter = (unit.lab_dir / "policies.py").read_text(encoding="utf-8")
    texts = {p.stem: filled(starter, p.read_text(encoding="utf-8")) for p in CLASS07.glob("*.py")}
    texts["original"] += f"\n\ndef shout():\n    return {HOSTILE!r}  # {HOSTILE}\n"
    texts["copy"] = disguised(texts["original"])
    paths = []
    for name, text in texts.items():
        (root / name).mkdir()
        (root / name / "policies.py").write_text(text, encoding="utf-8")
        paths.append(root / name)
    comparison = detect.compare(unit, detect.load_class(unit, paths))
    html, _ = page.write(comparison, root / "out")
    return Path(html), comparison


@pytest.mark.parametrize("width", [1280, 390])
def test_similarity_page_passes_axe_and_shows_the_copy(browser, report, width):  # noqa: F811
    path, comparison = report
    context = browser.new_context(viewport={"width": width, "height": 900})
    tab = context.new_page()
    errors, dialogs = [], []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    try:
        tab.goto(path.as_uri())
        assert [(p.a, p.b) for p in comparison.flagged] == [("copy", "original")]
        assert tab.locator("pre").count() == 2
        assert tab.locator("pre mark").count() >= 2
        assert HOSTILE in tab.locator("pre").first.inner_text()
        assert tab.locator("script, img").count() == 0
        tab.add_script_tag(content=AXE.read_text(encoding="utf-8"))
        violations = tab.evaluate(AXE_RUN, TAGS)
    finally:
        context.close()
    assert not errors, errors
    assert not dialogs, dialogs
    assert not violations, json.dumps(violations, ensure_ascii=False, indent=1)
