"""Unit 08's lesson page in headless chromium: plots, quiz, self-check and notes.

Uses the fixtures of test_browser.py (same skips: Debian's chromium and playwright).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from test_browser import browser, page, server  # noqa: F401  (fixtures)

FIGURES = (
    "timeline-batching",
    "kv-pages",
    "sweep-goodput",
    "sweep-p99",
    "loops-ttft",
    "timed-steps",
)


def test_plots_are_drawn_with_text_alternatives(page, server):  # noqa: F811
    page.goto(f"{server}/unit08/index.html")
    for figure in FIGURES:
        svg = page.locator(f"svg#{figure}")
        assert svg.get_attribute("role") == "img"
        assert svg.locator("desc").text_content().strip()
        box = svg.bounding_box()
        assert box and box["width"] > 300 and box["height"] > 150, figure
    lines = page.locator("svg#sweep-goodput g.series")
    assert lines.count() == page.locator("#operating-points tbody tr").count() >= 2
    assert page.locator("svg#kv-pages path.mark").count() == int(
        page.locator('[data-value="preempts-paged"]').inner_text()
    )


def test_quiz_checklist_and_notes(page, server):  # noqa: F811
    url = f"{server}/unit08/index.html"
    page.goto(url)
    quizzes = page.locator("[data-quiz]")
    assert quizzes.count() >= 4
    for i in range(quizzes.count()):
        quiz = quizzes.nth(i)
        assert quiz.locator('button[data-correct="true"]').count() == 1
        quiz.locator('button[data-correct="false"]').first.click()
        assert quiz.locator(".quiz-feedback").get_attribute("data-verdict") == "wrong"
        quiz.locator('button[data-correct="true"]').click()
        assert quiz.locator(".quiz-feedback").get_attribute("data-verdict") == "right"
    page.locator('[data-checklist="unit08-selfcheck"] input[data-item="denominator"]').check()
    text = "协议：azure-conv-slice，开环\n结果：工作点"
    page.locator('textarea[data-notes="unit08-notes"]').fill(text)
    page.reload()
    box = page.locator('[data-checklist="unit08-selfcheck"] input[data-item="denominator"]')
    assert box.is_checked()
    assert page.locator('textarea[data-notes="unit08-notes"]').input_value() == text
    assert page.locator('a[href="infra-lab-unit08.zip"]').count() >= 1


@pytest.mark.parametrize("width", [1280, 390])
def test_unit08_screenshots(browser, server, tmp_path, width):  # noqa: F811
    context = browser.new_context(viewport={"width": width, "height": 900})
    shot_page = context.new_page()
    shot_page.goto(f"{server}/unit08/index.html")
    scroll = shot_page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"page is {scroll}px wide at a {width}px viewport"
    fonts = shot_page.evaluate(
        """() => [...document.querySelectorAll('svg.chart')].map(svg => {
            const t = svg.querySelector('.tick');
            return t.getBoundingClientRect().height; })"""
    )
    assert min(fonts) >= 8, f"chart tick labels too small on screen: {fonts}"
    shot = tmp_path / f"unit08-{width}.png"
    shot_page.screenshot(path=str(shot), full_page=True)
    context.close()
    assert shot.stat().st_size > 10_000
    keep = os.environ.get("INFRALAB_SHOTS_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)


@pytest.mark.parametrize("width", [1280, 390])
def test_course_links_points_table_and_charts_at_width(browser, server, width):  # noqa: F811
    context = browser.new_context(viewport={"width": width, "height": 900})
    view = context.new_page()
    view.goto(f"{server}/unit08/index.html")
    # the unit nav links the previous unit and the glossary; both pages load
    prev = view.locator('nav.unit-nav a[data-course="prev"]')
    assert prev.get_attribute("href") == "../unit07/index.html"
    assert view.locator('nav.unit-nav a[href$="glossary.html"]').count() == 1
    # the points table: every part and the total, no header squeezed to one character a line
    table = view.locator("#points-table")
    table.scroll_into_view_if_needed()
    assert table.is_visible()
    rows = table.locator("tbody tr")
    assert rows.count() >= 6 and "合计" in rows.last.inner_text()
    lines = table.locator("thead th").evaluate_all(
        """l => l.map(th => { const r = document.createRange(); r.selectNodeContents(th);
            return [th.innerText, new Set([...r.getClientRects()].map(c => c.top)).size]; })"""
    )
    assert all(n == 1 for _, n in lines), f"a header wraps: {lines}"
    assert view.evaluate("document.documentElement.scrollWidth") <= width
    # the long sweep command stays reachable: it scrolls inside its box, the page does not
    command = view.locator("#sweep-command").locator("xpath=..")
    overflow = command.evaluate("e => getComputedStyle(e).overflowX")
    wide = command.evaluate("e => e.scrollWidth > e.clientWidth")
    assert overflow == "auto" or not wide
    # every chapter link lands on a section that exists
    anchors = view.locator("ul.chapter-links a").evaluate_all("l => l.map(a => a.href)")
    assert len(anchors) >= 6
    for href in anchors:
        target = context.new_page()
        target.goto(href)
        fragment = href.split("#", 1)[1]
        assert target.locator(f"section#{fragment}").count() == 1, href
        target.close()
    # charts are drawn at this width
    for figure in FIGURES:
        box = view.locator(f"svg#{figure}").bounding_box()
        assert box and box["width"] > 200, (figure, width)
    # the p99 TTFT chart and the loops chart draw the SLO's TTFT target, named in the legend
    for figure in ("sweep-p99", "loops-ttft"):
        assert view.locator(f"svg#{figure} > line.limit").count() == 1, figure
        key = view.locator(f"svg#{figure} g.legend-item:has(line.limit)")
        assert key.count() == 1 and "TTFT 目标" in key.text_content(), figure
    view.goto(f"{server}/glossary.html")
    term = view.locator("tr#operating-point")
    assert term.is_visible() and "工作点" in term.inner_text()
    assert "max_num_batched_tokens" in view.locator("tr#token-budget").inner_text()
    assert view.evaluate("document.documentElement.scrollWidth") <= width
    view.goto(f"{server}/unit07/index.html")
    assert view.locator('nav.unit-nav a[data-course="next"]').get_attribute("href") == (
        "../unit08/index.html"
    )
    assert view.locator("#points-table").count() == 1
    context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_wide_tables_say_they_scroll_and_scroll_from_the_keyboard(browser, server, width):  # noqa: F811
    # the sweep table is wider than the text column at both widths: it must say so above its
    # rows, mark its clipped edge, and scroll with the arrow keys once focused (WCAG 2.1.1)
    context = browser.new_context(viewport={"width": width, "height": 900})
    view = context.new_page()
    view.goto(f"{server}/unit08/index.html")
    table = view.locator("#sweep-table")
    table.scroll_into_view_if_needed()
    wide = table.evaluate("e => e.scrollWidth > e.clientWidth + 1")
    assert wide, f"the sweep table fits at {width}px: this test no longer tests a clipped table"
    cue = table.locator("xpath=preceding-sibling::*[1]")
    assert "scroll-cue" in (cue.get_attribute("class") or "") and cue.is_visible()
    assert "左右滑动" in cue.inner_text()
    assert table.evaluate("e => getComputedStyle(e).borderRightStyle") == "dashed"
    assert table.get_attribute("tabindex") == "0"
    name = table.evaluate(
        "e => (e.caption && e.caption.textContent) || e.getAttribute('aria-label')"
    )
    assert name and name.strip(), "a keyboard stop needs a name"
    table.focus()
    before = table.evaluate("e => e.scrollLeft")
    for _ in range(20):
        view.keyboard.press("ArrowRight")
    assert table.evaluate("e => e.scrollLeft") > before, "arrow keys do not scroll the table"
    table.evaluate("e => { e.scrollLeft = e.scrollWidth; }")
    view.wait_for_function(
        "() => document.querySelector('#sweep-table').classList.contains('at-end')"
    )
    assert table.evaluate("e => getComputedStyle(e).borderRightStyle") != "dashed"
    # every table that overflows carries the same cue; none that fits does
    states = view.locator("table.data").evaluate_all(
        """l => l.filter(t => t.getClientRects().length).map(t => [t.id,
            t.scrollWidth > t.clientWidth + 1,
            !!t.previousElementSibling?.classList.contains('scroll-cue')])"""
    )
    assert all(wide == cued for _, wide, cued in states), states
    context.close()
