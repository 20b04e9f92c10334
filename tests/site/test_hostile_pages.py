"""Hostile strings in every page the project writes, opened in headless chromium.

A request id, a trace name, a policy name or a chart label may hold ``</script>``,
``<!--<script>``, ``]]>``, quotes, U+2028 or markup that would run a script. Each page is
written with such a string in every string field of its input (a run file and its trace for the
run viewer; a trace's runs, chart series and a script data block for the lesson site; series
and labels for unit 08's sweep charts) and must draw all of its parts, show each string as
written, and run no script but its own: the payload calls ``pwn()``, which the browser context
defines to record the call. ``test_the_payload_runs_when_written_raw`` shows that the check
can fail. The escaping is ``servesim.htmlsafe``; docs/sandbox.md states the guarantee.

Uses the browser fixture and the skips of test_browser.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from markupsafe import Markup
from servesim import parse_trace
from servesim.runview import model
from servesim.runview.cli import main as view_main
from test_browser import browser  # noqa: F401  (fixture)
from unit08.u08tools import UNIT08, device, run08

from grader import reference
from grader.plugins import load_file
from grader.sitebuild import build, charts
from grader.sitebuild.chartseries import Series
from grader.sitebuild.runs import policy_run, trace_json, widest_gap
from grader.sitebuild.svg import Lane, timeline_svg
from grader.units import REPO_ROOT, load_unit

HOSTILE = (
    "</script><script>pwn('script')</script><img src=x onerror=pwn('img')><!--<script>]]>"
    "'\"\u2028\u2029&amp;"
)
RECORD_CALLS = "window.pwned = []; window.pwn = (what) => window.pwned.push(what);"


def hostile(value):
    """``value`` with ``HOSTILE`` in front of every string in it (keys stay: they are names the
    format fixes), so that ids stay consistent across requests and events."""
    if isinstance(value, str):
        return HOSTILE + value
    if isinstance(value, list):
        return [hostile(v) for v in value]
    if isinstance(value, dict):
        return {k: hostile(v) for k, v in value.items()}
    return value


def open_page(browser, url: str):  # noqa: F811
    """A tab on ``url`` with ``pwn`` recording and page errors collected (load waited for:
    the image of the payload has failed, and its onerror has run, by then)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(RECORD_CALLS)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.goto(url, wait_until="load")
    return context, tab, errors


def assert_ran_nothing_foreign(tab, errors: list[str], scripts: int) -> None:
    assert tab.evaluate("window.pwned") == []
    assert not errors, errors
    assert tab.locator("script").count() == scripts  # the page's own, no injected one
    assert tab.locator("img").count() == 0


def test_the_payload_runs_when_written_raw(browser, tmp_path):  # noqa: F811
    page = tmp_path / "raw.html"
    page.write_text(f"<!DOCTYPE html><html><body><p>{HOSTILE}</p></body></html>", "utf-8")
    context, tab, _ = open_page(browser, page.as_uri())
    try:
        assert sorted(tab.evaluate("window.pwned")) == ["img", "script"]
    finally:
        context.close()


def run_file(path: Path, run: dict, trace) -> Path:
    """A run file of ``run`` on ``trace`` with ``HOSTILE`` in every string field, plus a
    fault name, a device and a parameter entry of its own."""
    run = hostile(run)
    run["fault"] = HOSTILE
    run["device"][HOSTILE] = HOSTILE
    run["params"][HOSTILE] = HOSTILE
    doc = {"formatVersion": 1, "trace": hostile(trace_json(trace)), "runs": [run]}
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


def test_run_viewer_draws_everything_and_runs_nothing_foreign(browser, tmp_path):  # noqa: F811
    trace = reference.load_trace(UNIT08, "burst")
    # a file name is shown too (--against); it cannot hold "/", so the rest of the payload
    other_name = HOSTILE.replace("/", "") + ".json"
    mine = run_file(tmp_path / "mine.json", run08("burst", "paged", device("pool-256")), trace)
    other = run_file(tmp_path / other_name, run08("burst", "budgeted", device("pool-256")), trace)
    out = tmp_path / "mine.html"
    assert view_main([str(mine), "--against", str(other), "--output", str(out)]) == 0
    doc = json.loads(mine.read_text(encoding="utf-8"))
    picture = model.replay(doc["runs"][0])
    assert picture.steps and any(s.preempt for s in picture.steps)
    context, tab, errors = open_page(browser, out.as_uri())
    try:
        assert tab.locator("#steps-body tr").count() == min(100, len(picture.steps))
        assert tab.locator("#lanes-body tr").count() == min(50, len(picture.lanes))
        assert tab.locator("#lanes-body svg[role=img]").count() == min(50, len(picture.lanes))
        first_lane = tab.locator("#lanes-body tr").first.locator("td").first
        assert first_lane.text_content() == picture.lanes[0].id  # shown as written
        title = tab.locator("h1").text_content()
        assert doc["trace"]["name"] in title and doc["runs"][0]["policy"] in title
        assert HOSTILE in tab.locator("header p").text_content()  # the device line
        assert str(other) in tab.locator(".diff-box p").text_content()
        assert tab.locator("section[aria-labelledby=sum-h] dd").count() >= 3
        assert tab.locator("section[aria-labelledby=ov-h] svg polyline").count() == 2
        tab.click("#go-diff")
        assert tab.locator("#steps-body tr.diff").count() == 1
        assert_ran_nothing_foreign(tab, errors, scripts=2)  # the data block and view.js
    finally:
        context.close()


SITE_TEMPLATE = """<!DOCTYPE html>
<html lang="zh-CN"><head><meta charset="utf-8"><title>{{ s }}</title></head><body>
<h1 id="text">{{ s }}</h1>
<p id="attr" title="{{ s }}">{{ s|squash }}</p>
<p id="claim">{{ s|claim(true, s) }}</p>
<figure id="timeline">{{ timeline }}</figure>
<figure id="lines">{{ lines }}</figure>
<figure id="bars">{{ bars }}</figure>
<script type="application/json" id="explorer-data">{{ data }}</script>
<p id="end">{{ s }}</p>
</body></html>
"""


@pytest.fixture(scope="module")
def site_page(tmp_path_factory):
    """A page written by the site's own renderer (Jinja environment, claim filter, page
    writer) from hostile runs, charts and script data."""
    unit = load_unit("unit07")
    trace = reference.load_trace(unit, "mixed")
    bad = parse_trace(hostile(trace_json(trace)), source="hostile")
    dev = reference.device_profile(unit)
    runs = [
        policy_run(unit, bad, "fcfs", {}, dev, HOSTILE + "fcfs"),
        policy_run(unit, bad, "chunked", {"chunk": 2}, dev, HOSTILE + "chunk=2"),
    ]
    lanes = [Lane(r.label, r, widest_gap(r, HOSTILE + "A")) for r in runs]
    timeline = timeline_svg(lanes, title=HOSTILE, desc=HOSTILE, element_id="tl")
    series = [
        Series(HOSTILE + "a", [(1, 2), (2, 3)], marks=[(1, 2, HOSTILE)]),
        Series(HOSTILE + "b", [(1, 1), (2, 4)], errors=[(0.5, 1.5), None]),
    ]
    words = {"title": HOSTILE, "desc": HOSTILE, "x_label": HOSTILE, "y_label": HOSTILE}
    lines = charts.line_chart(series, element_id="lc", hline=(3, HOSTILE), **words)
    bars = charts.bar_chart(
        [HOSTILE + "g1", HOSTILE + "g2"],
        [(HOSTILE + "s", [1.0, 2.0])],
        element_id="bc",
        hline=(1.5, HOSTILE),
        **words,
    )
    site_context = load_file(REPO_ROOT / "labs/unit07/site_context.py")
    data = {"note": HOSTILE, "cells": {HOSTILE: [HOSTILE, 1]}}
    folder = tmp_path_factory.mktemp("hostile-site")
    (folder / "hostile.html.j2").write_text(SITE_TEMPLATE, encoding="utf-8")
    report = build.BuildReport(folder)
    renderer = build._Renderer(folder, report, [])
    renderer.page(
        build._environment(folder),
        "hostile.html.j2",
        "hostile.html",
        s=HOSTILE,
        timeline=Markup(timeline),
        lines=lines,
        bars=bars,
        data=Markup(site_context._script_json(data)),
    )
    return folder / "hostile.html", runs, data


def test_site_draws_everything_and_runs_nothing_foreign(browser, site_page):  # noqa: F811
    path, runs, data = site_page
    context, tab, errors = open_page(browser, path.as_uri())
    try:
        assert tab.locator("#end").count() == 1  # nothing swallowed the rest of the page
        assert tab.locator("#end").text_content() == HOSTILE
        assert tab.locator("#text").text_content() == HOSTILE
        assert tab.locator("#attr").get_attribute("title") == HOSTILE
        assert tab.locator("#claim span").get_attribute("data-checked") == HOSTILE
        assert tab.title() == HOSTILE
        requests = len(runs[0].run["requests"])
        assert tab.locator("#timeline svg g.arrival").count() == requests * len(runs)
        events = sum(len(r.events) for r in runs)
        assert tab.locator("#timeline svg g.ev").count() == events
        assert tab.locator("#timeline svg title").first.text_content() == HOSTILE
        assert tab.locator("#lines svg g.series").count() == 2
        assert tab.locator("#lines table tbody tr").count() == 2
        assert tab.locator("#bars svg g.series").count() == 1
        assert tab.locator("#bars table tbody tr").count() == 2
        shown = tab.evaluate("JSON.parse(document.getElementById('explorer-data').textContent)")
        assert shown == data
        assert_ran_nothing_foreign(tab, errors, scripts=1)  # the data block
    finally:
        context.close()


def test_sweep_chart_svg_draws_everything_and_runs_nothing_foreign(browser, tmp_path):  # noqa: F811
    plots = load_file(REPO_ROOT / "starter/unit08/plots.py")
    series = {HOSTILE + "a": [(1, 2, 1.5, 2.5), (2, 3)], HOSTILE + "b": [(1, 1), (2, 4)]}
    svg = plots.line_chart(series, HOSTILE, HOSTILE, HOSTILE, limit=(3, HOSTILE), bar_note=HOSTILE)
    path = tmp_path / "chart.svg"
    path.write_text(svg, encoding="utf-8")
    context, tab, errors = open_page(browser, path.as_uri())
    try:
        assert tab.evaluate("document.documentElement.localName") == "svg"  # parsed as XML
        texts = tab.locator("text").all_text_contents()
        assert texts.count(HOSTILE) == 5  # title, axis labels, limit, bar note
        assert texts.count(HOSTILE + "a") == 1 and texts.count(HOSTILE + "b") == 1
        assert tab.locator("path, polyline").count() >= 2
        assert_ran_nothing_foreign(tab, errors, scripts=0)
    finally:
        context.close()
