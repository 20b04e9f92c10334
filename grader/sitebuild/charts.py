"""Line and grouped-bar charts for lesson pages, as inline SVG with axes, units and a legend.

Unit-agnostic: a site plug-in hands over numbers and labels. The charts are drawn on a narrow
viewBox (about phone width) so their text stays readable when a 390 px screen shows them at full
width; colours come from CSS classes (``series-0``...) so the page's light and dark themes apply.
Each chart carries <title> and <desc> for screen readers. A value of ``math.inf`` (for example a
p99 that does not exist because too many requests failed) is drawn as a hollow marker on the top
edge and said so in the legend. A line's points may carry intervals (``Series.errors``), drawn as
error bars and said so in the legend (``bar_note``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

WIDTH = 400
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 14, 40
PLOT_H = 200
LEGEND_ROW = 20


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


def _fmt(value: float) -> str:
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


def _legend(names: list[str], y0: float, shape: str, extra: list[str] | str | None) -> list[str]:
    out = []
    for i, name in enumerate(names):
        y = y0 + LEGEND_ROW * i
        key = (
            f'<line class="series-{i}" x1="{LEFT}" y1="{y}" x2="{LEFT + 22}" y2="{y}"/>'
            if shape == "line"
            else f'<rect class="series-{i}" x="{LEFT}" y="{y - 6}" width="14" height="12"/>'
        )
        out.append(
            f'<g class="legend-item">{key}<text x="{LEFT + 28}" y="{y + 4}">'
            f"{escape(name)}</text></g>"
        )
    for k, note in enumerate([extra] if isinstance(extra, str) else extra or []):
        y = y0 + LEGEND_ROW * (len(names) + k)
        out.append(f'<text class="legend-note" x="{LEFT}" y="{y + 4}">{escape(note)}</text>')
    return out


def _line_path(values, sx, sy, step: bool) -> str:
    parts = []
    for i, (x, y) in enumerate(values):
        if step and i:
            parts.append(f"{sx(x):.1f},{sy(values[i - 1][1]):.1f}")
        parts.append(f"{sx(x):.1f},{sy(y):.1f}")
    return " ".join(parts)


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
    mark_note: str | None = None,
    bar_note: str = "竖线：置信区间",
) -> str:
    """An SVG line chart; ``hline`` is a labelled horizontal limit such as a pool size or an
    SLO; a series' ``errors`` are drawn as error bars, explained by ``bar_note``."""
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
    notes = [
        n for n in (inf_note if any_inf else None, mark_note, bar_note if any_bar else None) if n
    ]
    height = TOP + PLOT_H + BOTTOM + LEGEND_ROW * (len(series) + len(notes)) + 6
    out = _open(element_id, height, title, desc, "line-chart")
    out += _axes(x_ticks, y_ticks, sx, sy, x_label, y_label)
    if hline:
        out.append(
            f'<g class="limit"><line x1="{LEFT}" y1="{sy(hline[0]):.1f}" x2="{LEFT + plot_w}" '
            f'y2="{sy(hline[0]):.1f}"/><text x="{LEFT + plot_w - 4}" y="{sy(hline[0]) - 5:.1f}" '
            f'text-anchor="end">{escape(hline[1])}</text></g>'
        )
    for i, s in enumerate(series):
        out.append(f'<g class="series series-{i}" data-series="{escape(s.name)}">')
        out.append(f'<polyline points="{_line_path(s.points, sx, sy, s.step)}"/>')
        for (x, _), bar in zip(s.points, s.errors):
            if bar and all(math.isfinite(v) for v in bar):
                out.append(
                    f'<path class="error-bar" d="M{sx(x) - 4:.1f} {sy(bar[0]):.1f}h8'
                    f"M{sx(x):.1f} {sy(bar[0]):.1f}V{sy(bar[1]):.1f}"
                    f'M{sx(x) - 4:.1f} {sy(bar[1]):.1f}h8"/>'
                )
        if not s.step:
            for x, y in s.points:
                hollow = "" if math.isfinite(y) else " hollow"
                out.append(
                    f'<circle class="dot{hollow}" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3.5">'
                    f"<title>{escape(s.name)}: {_fmt(x)} → {_fmt(y)}</title></circle>"
                )
        for x, y, tip in s.marks:
            out.append(
                f'<path class="mark" d="M{sx(x) - 4:.1f} {sy(y) - 9:.1f} L{sx(x) + 4:.1f} '
                f'{sy(y) - 9:.1f} L{sx(x):.1f} {sy(y) - 2:.1f} Z">'
                f"<title>{escape(tip)}</title></path>"
            )
        out.append("</g>")
    legend_top = TOP + PLOT_H + BOTTOM + 8
    out += _legend([s.name for s in series], legend_top, "line", notes)
    out.append("</svg>")
    return "".join(out)


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
) -> str:
    """Grouped bars: one group per label in ``groups``, one bar per series in each group;
    ``errors[k][i]`` is an interval drawn over bar i of series k."""
    high = max((v for _, values in series for v in values if math.isfinite(v)), default=1)
    bars_high = [v for rows in errors or [] for e in rows if e for v in e if math.isfinite(v)]
    high = max([high, *bars_high])
    y_ticks = nice_ticks(high * 1.05)
    plot_w = WIDTH - LEFT - RIGHT
    slot = plot_w / len(groups)
    bar = min(28.0, slot * 0.7 / max(len(series), 1))

    def sx(i: float) -> float:
        return LEFT + slot * (i + 0.5)

    def sy(y: float) -> float:
        return TOP + PLOT_H * (1 - y / y_ticks[-1])

    note = bar_note if errors and any(e for rows in errors for e in rows) else None
    height = TOP + PLOT_H + BOTTOM + LEGEND_ROW * (len(series) + bool(note)) + 6
    out = _open(element_id, height, title, desc, "bar-chart")
    out += _axes(range(len(groups)), y_ticks, sx, sy, x_label, y_label, x_text=groups)
    for k, (name, values) in enumerate(series):
        out.append(f'<g class="series series-{k}" data-series="{escape(name)}">')
        for i, value in enumerate(values):
            x0 = sx(i) - bar * len(series) / 2 + bar * k
            out.append(
                f'<rect x="{x0:.1f}" y="{sy(value):.1f}" width="{bar - 2:.1f}" '
                f'height="{TOP + PLOT_H - sy(value):.1f}"><title>{escape(name)} · '
                f"{escape(groups[i])}: {_fmt(value)}</title></rect>"
            )
            bar_range = errors[k][i] if errors else None
            if bar_range and all(math.isfinite(v) for v in bar_range):
                middle = x0 + (bar - 2) / 2
                out.append(
                    f'<path class="error-bar" d="M{middle - 4:.1f} {sy(bar_range[0]):.1f}h8'
                    f"M{middle:.1f} {sy(bar_range[0]):.1f}V{sy(bar_range[1]):.1f}"
                    f'M{middle - 4:.1f} {sy(bar_range[1]):.1f}h8"/>'
                )
        out.append("</g>")
    out += _legend([name for name, _ in series], TOP + PLOT_H + BOTTOM + 8, "bar", note)
    out.append("</svg>")
    return "".join(out)
