"""The generic SVG charts of lesson pages: axes, legend, text alternatives, infinite values."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

from grader.sitebuild.charts import Series, bar_chart, line_chart, nice_ticks

NS = {"s": "http://www.w3.org/2000/svg"}


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


def test_nice_ticks_cover_the_range_with_round_steps():
    assert nice_ticks(20) == [0, 5, 10, 15, 20]
    assert nice_ticks(0) == [0.0, 1.0]
    ticks = nice_ticks(256 * 1.05)
    assert ticks[-1] >= 268.8 and ticks[1] - ticks[0] in (50, 100)


def test_line_chart_is_valid_svg_with_title_desc_legend_and_axis_labels():
    svg = ET.fromstring(_chart(hline=(15.0, "limit")))
    assert svg.get("role") == "img" and svg.get("aria-labelledby") == "c1-title c1-desc"
    assert svg.find("s:title", NS).text == "T" and svg.find("s:desc", NS).text == "D"
    texts = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert {"x (s)", "y (ms)", "a", "b", "limit"} <= set(texts)
    assert any("无穷大" in (t or "") for t in texts)  # an infinite value is explained
    hollow = svg.findall(".//s:circle[@class='dot hollow']", NS)
    assert len(hollow) == 1
    top = min(float(c.get("cy")) for c in svg.iter("{http://www.w3.org/2000/svg}circle"))
    assert float(hollow[0].get("cy")) == top  # drawn on the top edge
    assert len(svg.findall(".//s:path[@class='mark']", NS)) == 1


def test_step_series_holds_each_value_until_the_next_point():
    svg = _chart()
    step = re.findall(r'data-series="b"><polyline points="([^"]+)"', svg)[0].split()
    assert len(step) == 3  # (0,0) -> (2,0) -> (2,5)
    (_x0, y0), (x1, y1), (x2, y2) = (tuple(map(float, p.split(","))) for p in step)
    assert y0 == y1 and x1 == x2 and y2 < y1


def test_bar_heights_are_proportional_to_values():
    svg = ET.fromstring(
        bar_chart(
            ["p50", "p99"],
            [("x", [1.0, 2.0]), ("y", [0.5, 4.0])],
            element_id="b1",
            title="T",
            desc="D",
            x_label="q",
            y_label="s",
        )
    )
    heights = [float(r.get("height")) for r in svg.findall(".//s:g[@class]/s:rect", NS)]
    heights = heights[:4]
    assert heights[1] == 2 * heights[0] and heights[3] == 8 * heights[2]
