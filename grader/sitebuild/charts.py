"""Line and grouped-bar charts for lesson pages, as inline SVG with axes, units and a legend.

Unit-agnostic: a site plug-in hands over numbers and labels. The charts are drawn on a narrow
viewBox (about phone width) so their text stays readable when a 390 px screen shows them at full
width; colours come from CSS classes (``series-0``...) so the page's light and dark themes apply.

Accessible by construction: each chart carries <title> and <desc> for screen readers; colour is
never the only way to tell series apart (each has its own dash pattern and marker shape, bars of
the second series are hatched, lines are labelled at their end, bars carry their values); and
every plotted value is also in a data table under the chart (:class:`Chart` renders both). A
value of ``math.inf`` (for example a p99 that does not exist because too many requests failed)
is drawn as a hollow marker on the top edge, said so in the legend, and written ``inf_label``
in tooltips and the table. A point may carry an interval (``Series.errors``, ``bar_chart``'s
``errors``), drawn as an error bar, explained in the legend (``bar_note``) and written beside
the value in the table.
"""

from __future__ import annotations

import math

from servesim.htmlsafe import text as escape

from .chartparts import (
    BOTTOM,
    LEFT,
    LEGEND_ROW,
    PLOT_H,
    RIGHT,
    TOP,
    WIDTH,
    axes,
    bar_shape,
    dash,
    direct_labels,
    error_bar,
    fmt,
    frame,
    hatch_defs,
    legend,
    limit_line,
    line_path,
    marker,
    nice_ticks,
)
from .chartseries import Chart, Series
from .charttable import data_table, table_html, with_interval

__all__ = [
    "PLOT_H",
    "TOP",
    "Chart",
    "Series",
    "bar_chart",
    "data_table",
    "line_chart",
    "nice_ticks",
]


def line_chart(
    series: list[Series],
    *,
    element_id: str,
    title: str,
    desc: str,
    x_label: str,
    y_label: str,
    hline: tuple[float, str] | None = None,
    inf_note: str = "空心点在上沿：数值为无穷大",
    inf_label: str = "∞",
    mark_note: str | None = None,
    bar_note: str = "竖线：置信区间",
    end_labels: bool = True,
) -> Chart:
    """An SVG line chart and its data table; ``hline`` is a labelled horizontal limit such as a
    pool size or an SLO; ``inf_label`` is how an infinite value is written in tooltips and the
    table; a series' ``errors`` are drawn as error bars, explained by ``bar_note``;
    ``end_labels`` False leaves the names to the legend (lines that end where another runs)."""
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points if math.isfinite(y)]
    ys += [v for s in series for e in s.errors if e for v in e if math.isfinite(v)]
    if hline:
        ys.append(hline[0])
    x_ticks = nice_ticks(max(xs, default=1))
    y_ticks = nice_ticks(max(ys, default=1) * 1.05)
    plot_w = WIDTH - LEFT - RIGHT

    def sx(x: float) -> float:
        return LEFT + plot_w * x / x_ticks[-1]

    def sy(y: float) -> float:
        return TOP + PLOT_H * (1 - min(y, y_ticks[-1]) / y_ticks[-1])

    any_inf = any(not math.isfinite(y) for s in series for _, y in s.points)
    any_bar = any(e for s in series for e in s.errors)
    notes = [n for n in (inf_note if any_inf else None, mark_note, any_bar and bar_note) if n]
    rows = len(series) + len(notes) + bool(hline)
    out = frame(
        element_id, TOP + PLOT_H + BOTTOM + LEGEND_ROW * rows + 6, title, desc, "line-chart"
    )
    out += axes(x_ticks, y_ticks, sx, sy, x_label, y_label)
    out += limit_line(hline, sy, plot_w)
    for i, s in enumerate(series):
        out.append(f'<g class="series series-{i}" data-series="{escape(s.name)}">')
        out.append(f'<polyline points="{line_path(s.points, sx, sy, s.step)}"{dash(i)}/>')
        for (x, _), bar in zip(s.points, s.errors):
            if bar and all(math.isfinite(v) for v in bar):
                out.append(error_bar(sx(x), sy(bar[0]), sy(bar[1])))
        if not s.step:
            for x, y in s.points:
                hollow = "" if math.isfinite(y) else " hollow"
                out.append(
                    marker(i, sx(x), sy(y), hollow)
                    + f"><title>{escape(s.name)}: {fmt(x)} → {escape(fmt(y, inf_label))}"
                    "</title></path>"
                )
        for x, y, tip in s.marks:
            out.append(
                f'<path class="mark" d="M{sx(x) - 4:.1f} {sy(y) - 9:.1f} L{sx(x) + 4:.1f} '
                f'{sy(y) - 9:.1f} L{sx(x):.1f} {sy(y) - 2:.1f} Z">'
                f"<title>{escape(tip)}</title></path>"
            )
        out.append("</g>")
    if end_labels:
        out += direct_labels(series, sx, sy)
    legend_top = TOP + PLOT_H + BOTTOM + 8
    marked = [not s.step for s in series]
    limit = hline[1] if hline else None
    out += legend([s.name for s in series], legend_top, "line", notes, element_id, marked, limit)
    out.append("</svg>")
    return Chart("".join(out), data_table(title, x_label, series, inf_label, mark_note))


def bar_chart(
    groups: list[str],
    series: list[tuple[str, list[float]]],
    *,
    element_id: str,
    title: str,
    desc: str,
    x_label: str,
    y_label: str,
    errors: list[list[tuple[float, float] | None]] | None = None,
    bar_note: str = "竖线：置信区间",
    hline: tuple[float, str] | None = None,
) -> Chart:
    """Grouped bars: one group per label in ``groups``, one bar per series in each group, each
    bar labelled with its value; ``errors[k][i]`` is an interval drawn over bar i of series k
    (explained by ``bar_note``); ``hline`` is a horizontal limit, as in ``line_chart``; the data
    table has a row per group, a column per series."""
    errors = errors or [[None] * len(values) for _, values in series]
    high = max((v for _, values in series for v in values), default=1)
    high = max([high, *(v for row in errors for e in row if e for v in e if math.isfinite(v))])
    high = max(high, hline[0] if hline else 0)
    y_ticks = nice_ticks(high * 1.12)  # room for the value labels above the bars
    plot_w = WIDTH - LEFT - RIGHT
    slot = plot_w / len(groups)
    bar = min(28.0, slot * 0.7 / max(len(series), 1))

    def sx(i: float) -> float:
        return LEFT + slot * (i + 0.5)

    def sy(y: float) -> float:
        return TOP + PLOT_H * (1 - y / y_ticks[-1])

    note = [bar_note] if any(e for row in errors for e in row) else []
    rows = len(series) + len(note) + bool(hline)
    out = frame(element_id, TOP + PLOT_H + BOTTOM + LEGEND_ROW * rows + 6, title, desc, "bar-chart")
    out.append(hatch_defs(element_id, len(series)))
    out += axes(range(len(groups)), y_ticks, sx, sy, x_label, y_label, x_text=groups)
    out += limit_line(hline, sy, plot_w)
    for k, (name, values) in enumerate(series):
        out.append(f'<g class="series series-{k}" data-series="{escape(name)}">')
        for i, value in enumerate(values):
            x0 = sx(i) - bar * len(series) / 2 + bar * k
            interval = errors[k][i]
            top = max(value, interval[1]) if interval else value
            out.append(
                f"<g><title>{escape(name)} · {escape(groups[i])}: "
                f"{escape(with_interval(value, interval, '∞'))}</title>"
                + bar_shape(element_id, k, x0, sy(value), bar - 2, TOP + PLOT_H - sy(value))
                + (
                    error_bar(x0 + (bar - 2) / 2, sy(interval[0]), sy(interval[1]))
                    if interval
                    else ""
                )
                + f'<text class="value-label" x="{x0 + (bar - 2) / 2:.1f}" '
                f'y="{sy(top) - 4:.1f}" text-anchor="middle">{fmt(round(value, 2))}</text></g>'
            )
        out.append("</g>")
    names = [name for name, _ in series]
    limit = hline[1] if hline else None
    out += legend(names, TOP + PLOT_H + BOTTOM + 8, "bar", note, element_id, limit=limit)
    out.append("</svg>")
    head = "".join(f'<th scope="col">{escape(name)}</th>' for name, _ in series)
    rows = [
        f'<tr><th scope="row">{escape(group)}</th>'
        + "".join(
            f"<td>{escape(with_interval(values[i], errors[k][i], '∞'))}</td>"
            for k, (_, values) in enumerate(series)
        )
        + "</tr>"
        for i, group in enumerate(groups)
    ]
    return Chart("".join(out), table_html(title, x_label, head, rows))
