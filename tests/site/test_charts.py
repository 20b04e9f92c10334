"""The generic SVG charts of lesson pages: axes, legend, text alternatives, infinite values,
series told apart without colour, and every plotted value in a data table."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import html5lib

from grader.sitebuild.charts import PLOT_H, TOP, Series, bar_chart, line_chart, nice_ticks

NS = {"s": "http://www.w3.org/2000/svg"}
SVG = "{http://www.w3.org/2000/svg}"


def _chart(**extra):
    series = [
        Series("a", [(1, 10.0), (2, 20.0), (3, math.inf)]),
        Series("b", [(0, 0.0), (2, 5.0)], step=True, marks=[(2, 5.0, "mark at 2")]),
    ]
    return line_chart(
        series,
        element_id="c1",
        title="T",
        desc="D",
        x_label="x (s)",
        y_label="y (ms)",
        **extra,
    )


def _bars():
    return bar_chart(
        ["p50", "p99"],
        [("x", [1.0, 2.0]), ("y", [0.5, 4.0])],
        element_id="b1",
        title="T",
        desc="D",
        x_label="q",
        y_label="s",
    )


def _table_rows(html: str) -> list[list[str]]:
    doc = html5lib.parse(html, namespaceHTMLElements=False)
    return [
        ["".join(cell.itertext()) for cell in row]
        for row in doc.iter("tr")
        if row.find("th[@scope='row']") is not None or row.find("td") is not None
    ]


def test_nice_ticks_cover_the_range_with_round_steps():
    assert nice_ticks(20) == [0, 5, 10, 15, 20]
    assert nice_ticks(0) == [0.0, 1.0]
    ticks = nice_ticks(256 * 1.05)
    assert ticks[-1] >= 268.8 and ticks[1] - ticks[0] in (50, 100)


def test_line_chart_is_valid_svg_with_title_desc_legend_and_axis_labels():
    svg = ET.fromstring(_chart(hline=(15.0, "limit")).svg)
    assert svg.get("role") == "img" and svg.get("aria-labelledby") == "c1-title c1-desc"
    assert svg.find("s:title", NS).text == "T" and svg.find("s:desc", NS).text == "D"
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    assert {"x (s)", "y (ms)", "a", "b", "limit"} <= set(texts)
    assert any("无穷大" in (t or "") for t in texts)  # an infinite value is explained
    hollow = svg.findall(".//s:path[@class='marker hollow']", NS)
    assert len(hollow) == 1
    markers = svg.findall(".//s:g[@data-series='a']/s:path", NS)
    tops = [float(re.findall(r"[\d.]+", m.get("d"))[1]) for m in markers]
    assert tops[2] == min(tops)  # the infinite value sits on the top edge
    assert len(svg.findall(".//s:path[@class='mark']", NS)) == 1


def test_series_differ_by_dash_and_marker_shape_and_are_labelled_at_their_end():
    series = [Series(f"s{i}", [(1, float(i)), (2, float(i + 1))]) for i in range(4)]
    chart = line_chart(series, element_id="c2", title="T", desc="D", x_label="x", y_label="y")
    svg = ET.fromstring(chart.svg)
    lines = svg.findall(".//s:g[@class]/s:polyline", NS)
    assert len({line.get("stroke-dasharray", "solid") for line in lines}) == 4
    shapes = set()
    for marker in svg.findall(".//s:g[@data-series]/s:path[@class='marker']", NS):
        d = marker.get("d")
        xs = {round(float(x), 1) for x in re.findall(r"[ML](-?[\d.]+)", d)}
        shapes.add((re.sub(r"[-\d. ]+", "", d), len(xs)))  # commands, distinct corner xs
    assert len(shapes) == 4  # circle, square, triangle, diamond
    labels = [t for t in svg.iter(f"{SVG}text") if t.get("class", "").startswith("direct-label")]
    assert [t.text for t in labels] == ["s0", "s1", "s2", "s3"]
    ys = sorted(float(t.get("y")) for t in labels)
    assert all(b - a >= 13 for a, b in zip(ys, ys[1:]))  # close ends: labels pushed apart


def test_a_limit_is_named_in_the_legend_and_not_over_the_plot():
    """A limit's name in the plot collides with the lines' end labels and error bars (figure
    08.4's "目标 90%" overprinted large-paged); it gets a legend row of its own instead."""
    series = [Series("near", [(1, 95.0), (2, 91.0)]), Series("far", [(1, 50.0), (2, 40.0)])]
    charts = [
        line_chart(
            series, element_id="c5", title="T", desc="D", x_label="x", y_label="y",
            hline=(90.0, "target 90%"),
        ),
        bar_chart(
            ["a", "b"], [("near", [95.0, 91.0])], element_id="c6", title="T", desc="D",
            x_label="x", y_label="y", hline=(90.0, "target 90%"),
        ),
    ]  # fmt: skip
    for chart in charts:
        svg = ET.fromstring(chart.svg)
        plot_bottom = TOP + PLOT_H
        (limit,) = [t for t in svg.iter(f"{SVG}text") if t.text == "target 90%"]
        legend_rows = [t for t in svg.iter(f"{SVG}text") if t.text in ("near", "target 90%")]
        assert float(limit.get("y")) > plot_bottom  # below the plot, in the legend
        ys = sorted(float(t.get("y")) for t in legend_rows)
        assert all(b - a >= 13 for a, b in zip(ys, ys[1:]))
        lines = svg.findall(".//s:line[@class='limit']", NS)
        assert len(lines) == 2  # across the plot, and its sample in the legend
        assert float(lines[0].get("y1")) < float(limit.get("y"))


def test_step_series_holds_each_value_until_the_next_point():
    svg = _chart().svg
    step = re.findall(r'data-series="b"><polyline points="([^"]+)"', svg)[0].split()
    assert len(step) == 3  # (0,0) -> (2,0) -> (2,5)
    (_x0, y0), (x1, y1), (x2, y2) = (tuple(map(float, p.split(","))) for p in step)
    assert y0 == y1 and x1 == x2 and y2 < y1


def test_every_plotted_value_is_in_the_data_table_and_infinity_is_named():
    chart = _chart(inf_label="∞ (none)", mark_note="▼ mark")
    rows = _table_rows(chart.table)
    # one row per x; the step series holds its value; "—" where a line has no point
    assert rows == [
        ["0", "—", "0", ""],
        ["1", "10", "0", ""],
        ["2", "20", "5", "mark at 2"],
        ["3", "∞ (none)", "5", ""],
    ]
    assert "infk" not in str(chart) and "∞ (none)" in chart.svg  # in the tooltip too
    assert str(chart) == chart.svg + chart.table  # what a template shows: chart, then table


def test_bar_heights_are_proportional_to_values_and_bars_carry_their_values():
    chart = _bars()
    svg = ET.fromstring(chart.svg)
    heights = [
        float(r.get("height"))
        for r in svg.findall(".//s:g[@data-series]//s:rect", NS)
        if r.get("class") != "hatch"
    ]
    assert heights[1] == 2 * heights[0] and heights[3] == 8 * heights[2]
    values = [t.text for t in svg.iter(f"{SVG}text") if t.get("class") == "value-label"]
    assert values == ["1", "2", "0.5", "4"]
    hatched = svg.findall(".//s:g[@data-series='y']//s:rect[@class='hatch']", NS)
    assert len(hatched) == 2 and svg.find(".//s:pattern[@id='b1-hatch']", NS) is not None
    assert _table_rows(chart.table) == [["p50", "1", "0.5"], ["p99", "2", "4"]]
