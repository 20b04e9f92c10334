"""The pieces every chart of ``grader.sitebuild.charts`` is drawn from: the frame and its
<title>/<desc>, axes and round ticks, each series' dash pattern and marker shape, hatched bars,
error bars, the horizontal limit, the legend and the labels written at the end of each line.
Screen coordinates come in as the chart's ``sx``/``sy`` functions."""

from __future__ import annotations

import math

from servesim.htmlsafe import text as escape

from .chartseries import Series

WIDTH = 400
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 14, 40
PLOT_H = 200
LEGEND_ROW = 20
DASHES = ("", "7 4", "2 3", "9 3 2 3")  # stroke-dasharray by series index
MARKERS = ("circle", "square", "triangle", "diamond")
LABEL_GAP = 13  # least vertical distance between two direct labels


def nice_ticks(high: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``high``."""
    if not high > 0:
        return [0.0, 1.0]
    raw = high / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [step * i for i in range(math.ceil(high / step - 1e-9) + 1)]


def fmt(value: float, inf_label: str = "∞") -> str:
    if math.isinf(value):
        return inf_label if value > 0 else "−∞"
    if abs(value) >= 10000:
        return f"{value / 1000:g}k"
    return f"{value:.6g}"


def frame(element_id: str, height: float, title: str, desc: str, kind: str) -> list[str]:
    return [
        f'<svg id="{element_id}" class="chart {kind}" viewBox="0 0 {WIDTH} {height:.0f}" '
        f'role="img" aria-labelledby="{element_id}-title {element_id}-desc" '
        'xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{element_id}-title">{escape(title)}</title>',
        f'<desc id="{element_id}-desc">{escape(desc)}</desc>',
    ]


def axes(x_ticks, y_ticks, sx, sy, x_label: str, y_label: str, x_text=None) -> list[str]:
    plot_w = WIDTH - LEFT - RIGHT
    out = []
    for y in y_ticks:
        out.append(
            f'<line class="grid" x1="{LEFT}" y1="{sy(y):.1f}" x2="{LEFT + plot_w}" '
            f'y2="{sy(y):.1f}"/><text class="tick" x="{LEFT - 5}" y="{sy(y) + 4:.1f}" '
            f'text-anchor="end">{fmt(y)}</text>'
        )
    for i, x in enumerate(x_ticks):
        label = x_text[i] if x_text else fmt(x)
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


def dash(i: int) -> str:
    dash = DASHES[i % len(DASHES)]
    return f' stroke-dasharray="{dash}"' if dash else ""


def marker(i: int, x: float, y: float, extra: str = "", r: float = 3.6) -> str:
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


def hatch_defs(element_id: str, count: int) -> str:
    """Diagonal hatching for every second series of bars (colour is not the only cue)."""
    return (
        f'<defs><pattern id="{element_id}-hatch" width="6" height="6" '
        'patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
        '<line class="hatch-fill" x1="0" y1="0" x2="0" y2="6"/></pattern></defs>'
        if count > 1
        else ""
    )


def bar_shape(element_id: str, k: int, x: float, y: float, w: float, h: float) -> str:
    rect = f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}"'
    if k % 2 == 0:
        return rect + "/>"
    return rect + f'/>{rect} class="hatch" fill="url(#{element_id}-hatch)"/>'


def limit_line(hline: tuple[float, str] | None, sy, plot_w: float) -> list[str]:
    """The horizontal limit across the plot; its name is in the legend, never in the plot,
    where it would collide with the lines' own labels and error bars."""
    if not hline:
        return []
    y = sy(hline[0])
    return [f'<line class="limit" x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}"/>']


def legend(
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
            key = f'<line x1="{LEFT}" y1="{y}" x2="{LEFT + 26}" y2="{y}"{dash(i)}/>'
            key += marker(i, LEFT + 13, y) + "/>" if markers[i] else ""
        else:
            key = bar_shape(element_id, i, LEFT, y - 6, 14, 12)
        out.append(
            f'<g class="legend-item series-{i}">{key}<text x="{LEFT + 32}" y="{y + 4}">'
            f"{escape(name)}</text></g>"
        )
    for k, note in enumerate([extra] if isinstance(extra, str) else extra or []):
        y = y0 + LEGEND_ROW * (names_and_limit + k)
        out.append(f'<text class="legend-note" x="{LEFT}" y="{y + 4}">{escape(note)}</text>')
    return out


def error_bar(x: float, low: float, high: float) -> str:
    """An interval drawn at screen x from screen y ``low`` to ``high``, with caps."""
    return (
        f'<path class="error-bar" d="M{x - 4:.1f} {low:.1f}h8M{x:.1f} {low:.1f}V{high:.1f}'
        f'M{x - 4:.1f} {high:.1f}h8"/>'
    )


def spread(wanted: list[float], low: float, high: float) -> list[float]:
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


def direct_labels(series: list[Series], sx, sy) -> list[str]:
    """The name of each (non-step) line next to its last point, labels kept apart."""
    ends = [(i, s) for i, s in enumerate(series) if s.points and not s.step]
    ys = spread([sy(s.points[-1][1]) + 4 for _, s in ends], TOP + 10, TOP + PLOT_H - 4)
    return [
        f'<text class="direct-label series-{i}" x="{sx(s.points[-1][0]) - 7:.1f}" y="{y:.1f}" '
        f'text-anchor="end">{escape(s.name)}</text>'
        for (i, s), y in zip(ends, ys)
    ]


def line_path(values, sx, sy, step: bool) -> str:
    parts = []
    for i, (x, y) in enumerate(values):
        if step and i:
            parts.append(f"{sx(x):.1f},{sy(values[i - 1][1]):.1f}")
        parts.append(f"{sx(x):.1f},{sy(y):.1f}")
    return " ".join(parts)
