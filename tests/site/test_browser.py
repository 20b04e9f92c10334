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

from grader import reference

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


@pytest.mark.parametrize("quiz_id", ["unit07-mixed", "unit07-prefill-only"])
def test_quiz_gives_feedback_per_answer(page, server, quiz_id):
    page.goto(f"{server}/unit07/index.html")
    assert page.locator("[data-quiz]").count() >= 3
    quiz = page.locator(f'[data-quiz="{quiz_id}"]')
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
    quiz = page.locator("[data-quiz]").first
    quiz.locator('button[data-correct="true"]').click()
    assert quiz.locator(".quiz-feedback").get_attribute("data-verdict") == "right"
    assert page.locator("math").count() == 0  # MathML lives on the notes page
    page.goto((site / "unit07" / "chapter31.html").as_uri())
    assert page.locator("math").count() > 10
    width = page.evaluate("document.querySelector('.equation math').getBoundingClientRect().width")
    assert width > 50  # rendered by the browser, not left as raw text


def _engine_pair(unit, chunk: int, overhead: float) -> dict[str, dict]:
    trace = reference.load_trace(unit, "mixed")
    device = reference.device_profile(unit, overhead_ms=overhead)
    return {
        "fcfs": reference.run_reference(unit, trace, "fcfs", {}, device),
        "chunked": reference.run_reference(unit, trace, "chunked", {"chunk": chunk}, device),
    }


def _figure(page) -> dict:
    """What the timeline figure shows now: lanes, arrivals, gap notes, bars, label sizes."""
    return page.evaluate(
        """() => {
        const svg = document.querySelector('#explorer-figure svg.timeline');
        const scale = svg.getScreenCTM().a;
        const px = el => parseFloat(getComputedStyle(el).fontSize) * scale;
        return {
          lanes: [...svg.querySelectorAll('.lane-label')].map(t => t.textContent),
          arrivals: [...svg.querySelectorAll('.arrival')]
            .map(g => [g.dataset.request, +g.dataset.ms]),
          gaps: [...svg.querySelectorAll('.gap-note')].map(g => [g.dataset.request, +g.dataset.ms]),
          gapText: [...svg.querySelectorAll('.gap-note text')].map(t => t.textContent),
          bars: svg.querySelectorAll('.ev').length,
          smallest: Math.min(
            ...[...svg.querySelectorAll('.first-token text, .arrival text')].map(px)),
        };
    }"""
    )


def _table(page) -> dict[str, dict[str, float]]:
    return page.eval_on_selector_all(
        "#mixed-table tbody tr",
        """rows => Object.fromEntries(rows.map(row => [row.dataset.policy,
            Object.fromEntries([...row.querySelectorAll('td[data-metric]')]
                .map(td => [td.dataset.metric, parseFloat(td.textContent)]))]))""",
    )


def _check_against_engine(page, unit, chunk: int, overhead: float) -> None:
    runs = _engine_pair(unit, chunk, overhead)
    figure, table = _figure(page), _table(page)
    assert figure["lanes"] == ["fcfs", f"chunk={chunk}"]
    assert figure["bars"] == sum(len(r["events"]) for r in runs.values())
    arrivals = [[r["id"], r["arrivalMs"]] for r in runs["fcfs"]["requests"]]
    assert sorted(figure["arrivals"]) == sorted(arrivals * 2)
    for policy, (request, ms) in zip(("fcfs", "chunked"), figure["gaps"]):
        a = next(r for r in runs[policy]["requests"] if r["id"] == "A")
        assert request == "A" and ms == pytest.approx(a["maxItlMs"], abs=0.005)
    for policy, run in runs.items():
        by_id = {r["id"]: r for r in run["requests"]}
        assert table[policy] == pytest.approx(
            {
                "A.maxItlMs": by_id["A"]["maxItlMs"],
                "L.ttftMs": by_id["L"]["ttftMs"],
                "S.ttftMs": by_id["S"]["ttftMs"],
                "allDoneMs": run["summary"]["allDoneMs"],
                "submissions": run["summary"]["submissions"],
            },
            abs=0.005,
        )


def test_figure_marks_arrivals_and_a_longest_gap(page, server, unit07):
    page.goto(f"{server}/unit07/index.html")
    figure = _figure(page)
    assert {r for r, _ in figure["arrivals"]} == {"A", "L", "S"} and len(figure["arrivals"]) == 6
    assert all("A 最长间隔" in text for text in figure["gapText"]) and len(figure["gapText"]) == 2
    assert figure["smallest"] >= 12, f"labels render at {figure['smallest']:.1f} px"
    default = unit07.device["overheadMs"]
    _check_against_engine(page, unit07, chunk=2, overhead=default)


def test_chunk_and_overhead_controls_switch_to_the_engines_runs(page, server, unit07):
    page.goto(f"{server}/unit07/index.html")
    slider = page.locator('[data-explorer] input[data-param="chunk"]')
    assert (slider.get_attribute("min"), slider.get_attribute("max")) == ("1", "12")
    before = _figure(page)
    slider.fill("5")
    assert page.locator('[data-explorer] output[data-show="chunk"]').inner_text() == "5"
    assert _figure(page) != before
    _check_against_engine(page, unit07, chunk=5, overhead=unit07.device["overheadMs"])
    page.locator('[data-explorer] input[data-param="overhead"][value="0.5"]').check()
    slider.fill("1")
    _check_against_engine(page, unit07, chunk=1, overhead=0.5)
    note = page.locator("[data-explorer] [data-note]").inner_text()
    assert "chunk=1" in note and "0.5 ms" in note
    assert page.locator("#mixed-table [data-cell=setting]").inner_text() == "chunk=1、开销 0.5 ms"


def test_notes_survive_a_reload(page, server):
    url = f"{server}/unit07/index.html"
    page.goto(url)
    notes = page.locator("textarea[data-notes]")
    text = "条件：mixed，chunk=2\n证据：A 的 tokenTimesMs\n仍不确定：开销变大会怎样"
    notes.fill(text)
    assert "已保存" in page.locator(".notes-status").inner_text()
    page.reload()
    assert page.locator("textarea[data-notes]").input_value() == text
    for word in ("条件", "证据", "结果", "不确定"):
        assert word in page.locator(".notes-box").inner_text() + notes.get_attribute("placeholder")
    page.locator("textarea[data-notes]").fill("")
    page.reload()
    assert page.locator("textarea[data-notes]").input_value() == ""


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("name", ["index", "handout", "chapter31"])
def test_screenshots(browser, server, tmp_path, width, name):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(f"{server}/unit07/{name}.html")
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"page is {scroll}px wide at a {width}px viewport"
    clipped = page.evaluate(
        """() => [...document.querySelectorAll('.equation')]
            .filter(e => e.scrollWidth > e.clientWidth + 1
                && !e.classList.contains('is-scrollable'))
            .length"""
    )
    assert clipped == 0, "a display formula overflows without the scroll cue"
    cues = page.evaluate(
        """() => [...document.querySelectorAll('.equation.is-scrollable')].map(e => {
            const cue = e.nextElementSibling;
            return cue && cue.classList.contains('scroll-cue') && cue.offsetHeight > 0
                ? cue.textContent : null; })"""
    )
    assert None not in cues, "a scrollable formula has no visible cue"
    if name == "chapter31" and width == 390:
        assert len(cues) >= 3  # the wide formulas of the notes page do overflow a phone
    shot = tmp_path / f"{name}-{width}.png"
    page.screenshot(path=str(shot), full_page=True)
    context.close()
    assert shot.stat().st_size > 10_000
    keep = os.environ.get("INFRALAB_SHOTS_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)


@pytest.mark.parametrize("width", [1280, 390])
def test_chapter_solutions_open_and_show_their_numbers(browser, server, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(f"{server}/unit07/chapter31.html")
    for section in ("estimator", "little", "mm1", "admission", "fairness", "algorithm", "goodput"):
        assert page.locator(f"section#{section} h2").is_visible()
    assert page.locator("#priority-table tbody tr").count() == 3
    assert page.locator("#loop-table tbody tr").count() == 2
    exercises = page.locator("#exercises .exercise")
    assert exercises.count() == 13
    assert page.locator("details.solution[open]").count() == 0
    shown = {
        "ex-31-2": ["24", "20.67"],
        "ex-31-5": ["共 34 页"],
        "ex-31-6": ["面积 4", "平均驻留 2"],
        "ex-31-10": ["= 8 s"],
    }
    for ex_id, numbers in shown.items():
        solution = page.locator(f"#{ex_id} details.solution")
        body = solution.locator("p").first
        assert body.is_hidden()
        solution.locator("summary").click()
        assert solution.get_attribute("open") is not None
        assert body.is_visible()
        text = solution.inner_text()
        for number in numbers:
            assert number in text, (ex_id, number)
    page.locator("#ex-31-2 details.solution summary").click()  # closes again
    assert page.locator("#ex-31-2 details.solution p").first.is_hidden()
    page.eval_on_selector_all("details.solution", "ds => ds.forEach(d => { d.open = true; })")
    formula = page.locator("#ex-31-7 details.solution .equation")
    assert formula.is_visible()
    if width == 390:  # the wide formula inside the solution gets its cue once opened
        formula.evaluate("e => new Promise(r => requestAnimationFrame(() => setTimeout(r, 50)))")
        assert "is-scrollable" in formula.get_attribute("class")
        assert page.locator("#ex-31-7 details.solution .scroll-cue").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    clipped = page.evaluate(
        """() => [...document.querySelectorAll('.equation')]
            .filter(e => e.scrollWidth > e.clientWidth + 1
                && !e.classList.contains('is-scrollable')).length"""
    )
    assert clipped == 0, "an opened solution holds a formula that overflows without the cue"
    cut = page.evaluate(
        """() => [...document.querySelectorAll('article math')]
            .filter(m => !m.closest('.equation, table.data'))
            .filter(m => m.getBoundingClientRect().right
                > m.closest('p, li, td').getBoundingClientRect().right + 1)
            .map(m => m.textContent)"""
    )
    assert cut == [], f"inline formulas wider than their line: {cut}"
    context.close()


# Every label of the explorer's timeline, as boxes on screen: lane names, bar labels (inside a
# bar, or right of a narrow one), arrival, first-token and gap labels; and every bar.
_LABEL_BOXES = """() => {
    const svg = document.querySelector('#explorer-figure svg.timeline');
    const box = el => { const r = el.getBoundingClientRect();
        return [r.left, r.top, r.right, r.bottom]; };
    return {
        plot: box(svg),
        texts: [...svg.querySelectorAll('text')].map(t => [t.textContent, box(t)]),
        inside: [...svg.querySelectorAll('g.ev')].filter(g => g.querySelector('text'))
            .map(g => [g.querySelector('text').textContent, box(g.querySelector('text')),
                       box(g.querySelector('rect'))]),
        outside: [...svg.querySelectorAll('text.ev-label')].map(t => [t.textContent, box(t)]),
        bars: [...svg.querySelectorAll('g.ev rect')].map(box),
    };
}"""


def _overlaps(a, b, slack: float = 0.5) -> bool:
    return (
        a[0] < b[2] - slack and b[0] < a[2] - slack and a[1] < b[3] - slack and b[1] < a[3] - slack
    )


def test_explorer_labels_stay_inside_their_plot_at_every_setting(browser, server):
    # unit 07's explorer at chunk = 1 once drew the labels of one-token prefills over the next
    # bars, and a lane name of chunk >= 10 ran past the figure's left edge
    for width in (1280, 390):
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        page.goto(f"{server}/unit07/index.html")
        slider = page.locator('[data-explorer] input[data-param="chunk"]')
        low, high = int(slider.get_attribute("min")), int(slider.get_attribute("max"))
        radios = page.locator('[data-explorer] input[data-param="overhead"]')
        for r in range(radios.count()):
            radios.nth(r).check()
            for chunk in range(low, high + 1):
                slider.fill(str(chunk))
                seen = page.evaluate(_LABEL_BOXES)
                where = f"chunk={chunk}, overhead #{r}, {width}px"
                left, top, right, bottom = seen["plot"]
                for text, (x0, y0, x1, y1) in seen["texts"]:
                    inside = x0 >= left - 0.5 and x1 <= right + 0.5 and y0 >= top - 0.5
                    assert inside and y1 <= bottom + 0.5, f"{where}: '{text}' leaves the plot"
                for text, label, bar in seen["inside"]:
                    assert label[0] >= bar[0] - 1 and label[2] <= bar[2] + 1, (
                        f"{where}: '{text}' is wider than its bar"
                    )
                for text, label in seen["outside"]:
                    hit = [b for b in seen["bars"] if _overlaps(label, b)]
                    assert not hit, f"{where}: '{text}' lies over a bar"
        context.close()
