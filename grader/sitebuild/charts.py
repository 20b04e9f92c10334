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
from dataclasses import dataclass, field
from html import escape

WIDTH = 400
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 14, 40
PLOT_H = 200
LEGEND_ROW = 20
DASHES = ("", "7 4", "2 3", "9 3 2 3")  # stroke-dasharray by series index
MARKERS = ("circle", "square", "triangle", "diamond")
LABEL_GAP = 13  # least vertical distance between two direct labels


@dataclass(frozen=True)
class Chart:
    """A chart as the page shows it: the SVG, then its data as a table in a <details>."""

    svg: str
    table: str

    def __html__(self) -> str:
        return self.svg + self.table

    __str__ = __html__


@dataclass(frozen=True)
class Series:
    """One line: its legend name and (x, y) points in x order."""

    name: str
    points: list[tuple[float, float]]
    step: bool = False  # draw as a step function (value holds until the next point)
    marks: list[tuple[float, float, str]] = field(default_factory=list)  # (x, y, tooltip)
    errors: list[tuple[float, float] | None] = field(default_factory=list)  # (low, high) per point


def nice_ticks(high: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``high``."""
    if not high > 0:
        return [0.0, 1.0]
    raw = high / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [step * i for i in range(math.ceil(high / step - 1e-9) + 1)]


def _fmt(value: float, inf_label: str = "∞") -> str:
    if math.isinf(value):
        return inf_label if value > 0 else "−∞"
    if abs(value) >= 10000:
        return f"{value / 1000:g}k"
    return f"{value:.6g}"


def _open(element_id: str, height: float, title: str, desc: str, kind: str) -> list[str]:
    return [
        f'<svg id="{element_id}" class="chart {kind}" viewBox="0 0 {WIDTH} {height:.0f}" '
        f'role="img" aria-labelledby="{element_id}-title {element_id}-desc" '
        'xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{element_id}-title">{escape(title)}</title>',
        f'<desc id="{element_id}-desc">{escape(desc)}</desc>',
    ]


def _axes(x_ticks, y_ticks, sx, sy, x_label: str, y_label: str, x_text=None) -> list[str]:
    plot_w = WIDTH - LEFT - RIGHT
    out = []
    for y in y_ticks:
        out.append(
            f'<line class="grid" x1="{LEFT}" y1="{sy(y):.1f}" x2="{LEFT + plot_w}" '
            f'y2="{sy(y):.1f}"/><text class="tick" x="{LEFT - 5}" y="{sy(y) + 4:.1f}" '
            f'text-anchor="end">{_fmt(y)}</text>'
        )
    for i, x in enumerate(x_ticks):
        label = x_text[i] if x_text else _fmt(x)
        out.append(
            f'<text class="tick" x="{sx(x):.1f}" y="{TOP + PLOT_H + 15}" '
            f'text-anchor="middle">{escape(label)}</text>'
        )
    out.append(
        f'<line class="axis-line" x1="{LEFT}" y1="{TOP + PLOT_H}" x2="{LEFT + plot_w}" '
        f'y2="{TOP + PLOT_H}"/><line class="axis-line" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" '
        f'y2="{TOP + PLOT_H}"/>'
        f'<text class="axis-label" x="{LEFT + plot_w / 2:.1f}" y="{TOP + PLOT_H + 33}" '
        f'text-anchor="middle">{escape(x_label)}</text>'
        f'<text class="axis-label" transform="translate(13 {TOP + PLOT_H / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_label)}</text>'
    )
    return out


def _dash(i: int) -> str:
    dash = DASHES[i % len(DASHES)]
    return f' stroke-dasharray="{dash}"' if dash else ""


def _marker(i: int, x: float, y: float, extra: str = "", r: float = 3.6) -> str:
    """The opening of series ``i``'s marker at (x, y): circle, square, triangle or diamond."""
    shape = MARKERS[i % len(MARKERS)]
    if shape == "circle":
        d = f"M{x - r:.1f} {y:.1f}a{r} {r} 0 1 0 {2 * r} 0a{r} {r} 0 1 0 {-2 * r} 0Z"
    else:
        corners = {
            "square": [(-1, -1), (1, -1), (1, 1), (-1, 1)],
            "triangle": [(0, -1.3), (1.2, 1), (-1.2, 1)],
            "diamond": [(0, -1.3), (1.3, 0), (0, 1.3), (-1.3, 0)],
        }[shape]
        d = "M" + "L".join(f"{x + dx * r:.1f} {y + dy * r:.1f}" for dx, dy in corners) + "Z"
    return f'<path class="marker{extra}" d="{d}"'


def _hatch_defs(element_id: str, count: int) -> str:
    """Diagonal hatching for every second series of bars (colour is not the only cue)."""
    return (
        f'<defs><pattern id="{element_id}-hatch" width="6" height="6" '
        'patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
        '<line class="hatch-fill" x1="0" y1="0" x2="0" y2="6"/></pattern></defs>'
        if count > 1
        else ""
    )


def _bar_shape(element_id: str, k: int, x: float, y: float, w: float, h: float) -> str:
    rect = f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}"'
    if k % 2 == 0:
        return rect + "/>"
    return rect + f'/>{rect} class="hatch" fill="url(#{element_id}-hatch)"/>'


def _limit_line(hline: tuple[float, str] | None, sy, plot_w: float) -> list[str]:
    """The horizontal limit across the plot; its name is in the legend, never in the plot,
    where it would collide with the lines' own labels and error bars."""
    if not hline:
        return []
    y = sy(hline[0])
    return [f'<line class="limit" x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}"/>']


def _legend(
    names: list[str],
    y0: float,
    shape: str,
    extra,
    element_id: str,
    markers=None,
    limit: str | None = None,
) -> list[str]:
    """One row per series (its line with dash and marker, or its bar), a row for the
    horizontal limit named ``limit`` if there is one, then a row per note of ``extra`` (a
    note, a list of notes, or None)."""
    markers = markers or [True] * len(names)
    out = []
    if limit:
        y = y0 + LEGEND_ROW * len(names)
        out.append(
            f'<g class="legend-item"><line class="limit" x1="{LEFT}" y1="{y}" x2="{LEFT + 26}" '
            f'y2="{y}"/><text x="{LEFT + 32}" y="{y + 4}">{escape(limit)}</text></g>'
        )
        names_and_limit = len(names) + 1
    else:
        names_and_limit = len(names)
    for i, name in enumerate(names):
        y = y0 + LEGEND_ROW * i
        if shape == "line":
            key = f'<line x1="{LEFT}" y1="{y}" x2="{LEFT + 26}" y2="{y}"{_dash(i)}/>'
            key += _marker(i, LEFT + 13, y) + "/>" if markers[i] else ""
        else:
            key = _bar_shape(element_id, i, LEFT, y - 6, 14, 12)
        out.append(
            f'<g class="legend-item series-{i}">{key}<text x="{LEFT + 32}" y="{y + 4}">'
            f"{escape(name)}</text></g>"
        )
    for k, note in enumerate([extra] if isinstance(extra, str) else extra or []):
        y = y0 + LEGEND_ROW * (names_and_limit + k)
        out.append(f'<text class="legend-note" x="{LEFT}" y="{y + 4}">{escape(note)}</text>')
    return out


def _error_bar(x: float, low: float, high: float) -> str:
    """An interval drawn at screen x from screen y ``low`` to ``high``, with caps."""
    return (
        f'<path class="error-bar" d="M{x - 4:.1f} {low:.1f}h8M{x:.1f} {low:.1f}V{high:.1f}'
        f'M{x - 4:.1f} {high:.1f}h8"/>'
    )


def _with_interval(value: float, bar, inf_label: str) -> str:
    text = _fmt(value, inf_label)
    return f"{text}（{_fmt(bar[0])}–{_fmt(bar[1])}）" if bar else text


def _spread(wanted: list[float], low: float, high: float) -> list[float]:
    """Positions as close to ``wanted`` as possible, at least LABEL_GAP apart, within bounds."""
    order = sorted(range(len(wanted)), key=lambda i: wanted[i])
    placed = [0.0] * len(wanted)
    floor = low
    for i in order:
        placed[i] = max(wanted[i], floor)
        floor = placed[i] + LABEL_GAP
    ceiling = high
    for i in reversed(order):
        placed[i] = min(placed[i], ceiling)
        ceiling = placed[i] - LABEL_GAP
    return placed


def _direct_labels(series: list[Series], sx, sy) -> list[str]:
    """The name of each (non-step) line next to its last point, labels kept apart."""
    ends = [(i, s) for i, s in enumerate(series) if s.points and not s.step]
    ys = _spread([sy(s.points[-1][1]) + 4 for _, s in ends], TOP + 10, TOP + PLOT_H - 4)
    return [
        f'<text class="direct-label series-{i}" x="{sx(s.points[-1][0]) - 7:.1f}" y="{y:.1f}" '
        f'text-anchor="end">{escape(s.name)}</text>'
        for (i, s), y in zip(ends, ys)
    ]


def _line_path(values, sx, sy, step: bool) -> str:
    parts = []
    for i, (x, y) in enumerate(values):
        if step and i:
            parts.append(f"{sx(x):.1f},{sy(values[i - 1][1]):.1f}")
        parts.append(f"{sx(x):.1f},{sy(y):.1f}")
    return " ".join(parts)


def _value_at(s: Series, x: float) -> float | None:
    """The value series ``s`` shows at ``x`` (the last point there), or for a step series the
    value it holds since its previous point; None where a line has no point."""
    held, exact = None, False
    for px, py in s.points:
        if px > x:
            break
        held, exact = py, px == x
    return held if exact or s.step else None


def data_table(
    title: str, x_label: str, series: list[Series], inf_label: str, mark_label: str | None
) -> str:
    """Every plotted value as a table: one row per x (of any series or mark), a column per
    series; a step series shows the value it holds at that x. Rows where nothing changes are
    left out."""
    xs = sorted(
        {x for s in series for x, _ in s.points} | {x for s in series for x, _, _ in s.marks}
    )
    marks = {}
    for s in series:
        for x, _, tip in s.marks:
            marks.setdefault(x, []).append(tip)
    bars = [dict(zip((x for x, _ in s.points), s.errors)) for s in series]
    head = "".join(f'<th scope="col">{escape(s.name)}</th>' for s in series)
    if marks:
        head += f'<th scope="col">{escape(mark_label or "标记")}</th>'
    rows, previous = [], None
    for x in xs:
        values = [_value_at(s, x) for s in series]
        if values == previous and x not in marks:
            continue
        previous = values
        cells = "".join(
            f"<td>{'—' if v is None else escape(_with_interval(v, bar.get(x), inf_label))}</td>"
            for v, bar in zip(values, bars)
        )
        if marks:
            cells += f"<td>{escape('；'.join(marks.get(x, [])))}</td>"
        rows.append(f'<tr><th scope="row">{_fmt(x)}</th>{cells}</tr>')
    return _table(title, x_label, head, rows)


def _table(title: str, first: str, head: str, rows: list[str]) -> str:
    return (
        '<details class="chart-data"><summary>图中数据（表格）</summary>'
        f'<table class="data numbers"><caption>{escape(title)}</caption>'
        f'<thead><tr><th scope="col">{escape(first)}</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></details>"
    )


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
) -> Chart:
    """An SVG line chart and its data table; ``hline`` is a labelled horizontal limit such as a
    pool size or an SLO; ``inf_label`` is how an infinite value is written in tooltips and the
    table; a series' ``errors`` are drawn as error bars, explained by ``bar_note``."""
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
    out = _open(
        element_id, TOP + PLOT_H + BOTTOM + LEGEND_ROW * rows + 6, title, desc, "line-chart"
    )
    out += _axes(x_ticks, y_ticks, sx, sy, x_label, y_label)
    out += _limit_line(hline, sy, plot_w)
    for i, s in enumerate(series):
        out.append(f'<g class="series series-{i}" data-series="{escape(s.name)}">')
        out.append(f'<polyline points="{_line_path(s.points, sx, sy, s.step)}"{_dash(i)}/>')
        for (x, _), bar in zip(s.points, s.errors):
            if bar and all(math.isfinite(v) for v in bar):
                out.append(_error_bar(sx(x), sy(bar[0]), sy(bar[1])))
        if not s.step:
            for x, y in s.points:
                hollow = "" if math.isfinite(y) else " hollow"
                out.append(
                    _marker(i, sx(x), sy(y), hollow)
                    + f"><title>{escape(s.name)}: {_fmt(x)} → {escape(_fmt(y, inf_label))}"
                    "</title></path>"
                )
        for x, y, tip in s.marks:
            out.append(
                f'<path class="mark" d="M{sx(x) - 4:.1f} {sy(y) - 9:.1f} L{sx(x) + 4:.1f} '
                f'{sy(y) - 9:.1f} L{sx(x):.1f} {sy(y) - 2:.1f} Z">'
                f"<title>{escape(tip)}</title></path>"
            )
        out.append("</g>")
    out += _direct_labels(series, sx, sy)
    legend_top = TOP + PLOT_H + BOTTOM + 8
    marked = [not s.step for s in series]
    limit = hline[1] if hline else None
    out += _legend([s.name for s in series], legend_top, "line", notes, element_id, marked, limit)
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
    out = _open(element_id, TOP + PLOT_H + BOTTOM + LEGEND_ROW * rows + 6, title, desc, "bar-chart")
    out.append(_hatch_defs(element_id, len(series)))
    out += _axes(range(len(groups)), y_ticks, sx, sy, x_label, y_label, x_text=groups)
    out += _limit_line(hline, sy, plot_w)
    for k, (name, values) in enumerate(series):
        out.append(f'<g class="series series-{k}" data-series="{escape(name)}">')
        for i, value in enumerate(values):
            x0 = sx(i) - bar * len(series) / 2 + bar * k
            interval = errors[k][i]
            top = max(value, interval[1]) if interval else value
            out.append(
                f"<g><title>{escape(name)} · {escape(groups[i])}: "
                f"{escape(_with_interval(value, interval, '∞'))}</title>"
                + _bar_shape(element_id, k, x0, sy(value), bar - 2, TOP + PLOT_H - sy(value))
                + (
                    _error_bar(x0 + (bar - 2) / 2, sy(interval[0]), sy(interval[1]))
                    if interval
                    else ""
                )
                + f'<text class="value-label" x="{x0 + (bar - 2) / 2:.1f}" '
                f'y="{sy(top) - 4:.1f}" text-anchor="middle">{_fmt(round(value, 2))}</text></g>'
            )
        out.append("</g>")
    names = [name for name, _ in series]
    limit = hline[1] if hline else None
    out += _legend(names, TOP + PLOT_H + BOTTOM + 8, "bar", note, element_id, limit=limit)
    out.append("</svg>")
    head = "".join(f'<th scope="col">{escape(name)}</th>' for name, _ in series)
    rows = [
        f'<tr><th scope="row">{escape(group)}</th>'
        + "".join(
            f"<td>{escape(_with_interval(values[i], errors[k][i], '∞'))}</td>"
            for k, (_, values) in enumerate(series)
        )
        + "</tr>"
        for i, group in enumerate(groups)
    ]
    return Chart("".join(out), _table(title, x_label, head, rows))
