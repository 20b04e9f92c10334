"""The lesson page in a real browser: Debian's chromium, headless, driven by Playwright.

Runs against the built site served on 127.0.0.1 (and once from file://). Skips with a reason
when /usr/bin/chromium or the playwright package is missing; CI installs both
(``apt-get install -y chromium`` and the ``test`` extra). Never runs ``playwright install``.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest
from sitetest_helpers import METRICS, engine_table

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

if not CHROMIUM.exists():
    pytest.skip(
        "browser test needs Debian's chromium at /usr/bin/chromium (apt-get install -y chromium)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="browser test needs playwright (pip install playwright)"
)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(built_site):
    site, _ = built_site
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    yield page
    context.close()
    assert errors == [], f"JavaScript errors: {errors}"
    outside = [u for u in requests if not u.startswith(("http://127.0.0.1:", "file://", "data:"))]
    assert outside == [], f"requests leaving the machine: {outside}"


def test_mixed_table_in_the_dom_matches_the_engine(page, server, unit07):
    page.goto(f"{server}/unit07/index.html")
    shown = page.eval_on_selector_all(
        "#mixed-table tbody tr",
        """rows => Object.fromEntries(rows.map(row => [row.dataset.policy,
            Object.fromEntries([...row.querySelectorAll('td[data-metric]')]
                .map(td => [td.dataset.metric, parseFloat(td.textContent)]))]))""",
    )
    expected = engine_table(unit07)
    assert set(shown) == set(expected)
    for policy, row in expected.items():
        for metric in METRICS:
            assert shown[policy][metric] == pytest.approx(row[metric], abs=0.005)


def test_quiz_gives_feedback_per_answer(page, server):
    page.goto(f"{server}/unit07/index.html")
    quiz = page.locator("[data-quiz]")
    feedback = quiz.locator(".quiz-feedback")
    assert feedback.is_hidden()
    wrong = quiz.locator('button[data-correct="false"]').first
    wrong.click()
    assert feedback.is_visible()
    assert feedback.get_attribute("data-verdict") == "wrong"
    assert wrong.get_attribute("data-feedback") in feedback.inner_text()
    assert "不对" in feedback.inner_text()
    right = quiz.locator('button[data-correct="true"]')
    assert right.count() == 1
    right.click()
    assert feedback.get_attribute("data-verdict") == "right"
    assert right.get_attribute("data-feedback") in feedback.inner_text()
    assert right.get_attribute("aria-pressed") == "true"
    assert wrong.get_attribute("aria-pressed") == "false"


def test_self_check_survives_a_reload(page, server):
    url = f"{server}/unit07/index.html"
    page.goto(url)
    box = page.locator('[data-checklist] input[data-item="recompute"]')
    other = page.locator('[data-checklist] input[data-item="scope"]')
    assert not box.is_checked()
    box.check()
    assert "1 / " in page.locator(".checklist-status").inner_text()
    page.reload()
    box = page.locator('[data-checklist] input[data-item="recompute"]')
    assert box.is_checked()
    assert not other.is_checked()
    assert "只保存在当前这个浏览器" in page.locator("#selfcheck").inner_text()
    page.locator("[data-checklist] [data-reset]").click()
    page.reload()
    assert not page.locator('[data-checklist] input[data-item="recompute"]').is_checked()


def test_works_from_file_url(page, built_site):
    site, _ = built_site
    page.goto((site / "unit07" / "index.html").as_uri())
    page.locator('button[data-correct="true"]').click()
    assert page.locator(".quiz-feedback").get_attribute("data-verdict") == "right"
    assert page.locator("math").count() == 0  # MathML lives on the notes page
    page.goto((site / "unit07" / "chapter31.html").as_uri())
    assert page.locator("math").count() > 10
    width = page.evaluate("document.querySelector('.equation math').getBoundingClientRect().width")
    assert width > 50  # rendered by the browser, not left as raw text


@pytest.mark.parametrize("width", [1280, 390])
def test_screenshots(browser, server, tmp_path, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(f"{server}/unit07/index.html")
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"page is {scroll}px wide at a {width}px viewport"
    shot = tmp_path / f"lesson-{width}.png"
    page.screenshot(path=str(shot), full_page=True)
    context.close()
    assert shot.stat().st_size > 10_000
    keep = os.environ.get("INFRALAB_SHOTS_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
