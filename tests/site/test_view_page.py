"""The run picture (view.py) in headless chromium: axe-core finds nothing, as on the site, and
the script draws its tables: a page of steps, the marked first difference, the request lanes.

Uses the browser fixture and the skips of test_browser.py, and axe-core as test_accessibility.py.
"""

from __future__ import annotations

import json

import pytest
from servesim.runview import diff, model, page
from test_accessibility import AXE, AXE_RUN, TAGS
from test_browser import browser  # noqa: F401  (fixture)
from unit08.u08tools import device, run08


@pytest.fixture(scope="module")
def picture_file(tmp_path_factory):
    mine = model.replay(run08("burst", "paged", device("pool-256")))
    other = model.replay(run08("burst", "budgeted", device("pool-256")))
    found = diff.first_difference(mine, other)
    path = tmp_path_factory.mktemp("view") / "burst.html"
    path.write_text(page.render(mine, "burst", found, "budgeted.json"), encoding="utf-8")
    return path, mine, found


@pytest.mark.parametrize("width", [1280, 390])
def test_view_page_passes_axe_and_draws_its_tables(browser, picture_file, width):  # noqa: F811
    path, picture, found = picture_file
    context = browser.new_context(viewport={"width": width, "height": 900})
    tab = context.new_page()
    errors = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        tab.goto(path.as_uri())
        rows = tab.locator("#steps-body tr")
        assert rows.count() == min(100, len(picture.steps))
        assert tab.locator("#lanes-body tr").count() == min(50, len(picture.lanes))
        assert tab.locator("#lanes-body svg[role=img]").count() == min(50, len(picture.lanes))
        tab.click("#go-diff")
        marked = tab.locator("#steps-body tr.diff")
        assert marked.count() == 1
        assert marked.locator("td").first.inner_text().endswith(str(found.step))
        shown = marked.locator("td").nth(4).inner_text()
        decoded = picture.steps[found.step].decode
        assert all(rid in shown for rid in decoded[:12])
        tab.add_script_tag(content=AXE.read_text(encoding="utf-8"))
        violations = tab.evaluate(AXE_RUN, TAGS)
    finally:
        context.close()
    assert not errors, errors
    assert not violations, json.dumps(violations, ensure_ascii=False, indent=1)


def test_a_registered_rule_shows_in_the_step_table(browser, tmp_path):  # noqa: F811
    """A rule registered as one component (test_next_rule_component) is drawn in each step's
    row by the page's own script: the viewer's files are not edited for it."""
    from servesim import components
    from test_next_rule_component import NAME, RULE, run_of, two_tenants

    components.register(RULE)
    try:
        picture = model.replay(run_of(two_tenants))
        html = page.render(picture, "tenants", None, None)
    finally:
        components.unregister(NAME)
    path = tmp_path / "tenants.html"
    path.write_text(html, encoding="utf-8")
    tab = browser.new_page()
    try:
        tab.goto(path.as_uri())
        rows = tab.locator("#steps-body tr")
        shown = [rows.nth(n).locator("td").nth(7).inner_text() for n in range(rows.count())]
    finally:
        tab.close()
    assert shown == ["tenants: " + ", ".join(step.marks["tenants"]) for step in picture.steps]
