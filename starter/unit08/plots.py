"""SVG line charts for sweep.py (given; standard library only).

``line_chart`` draws one line per series with axes, tick labels, units and a legend. A point
may carry its confidence interval, drawn as an error bar; ``limit`` draws a labelled horizontal
line (an SLO or a target). A value of ``math.inf`` (for example a p99 TTFT when more than 1 % of
the requests never got a first token) is drawn as a hollow marker on the top edge and explained
under the legend.
"""

from __future__ import annotations

import math

from servesim.htmlsafe import text as escape

WIDTH, HEIGHT = 640, 400
LEFT, RIGHT, TOP, BOTTOM = 70, 170, 40, 50
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")


def nice_ticks(high: float) -> list[float]:
    """Round tick values from 0 to at least ``high``: the step (1, 2, 2.5 or 5 times a power of
    ten) whose last tick, with 3 to 8 steps, lies closest above ``high`` (the wider step on a
    tie), so the axis ends near the data (105 ends at 120, not 125; 100 at 100)."""
    if high <= 0:
        return [0.0, 1.0]
    power = math.floor(math.log10(high))
    steps = [m * 10.0**e for e in range(power - 2, power + 1) for m in (1, 2, 2.5, 5)]
    fits = [(math.ceil(high / s - 1e-9), s) for s in steps]
    top, step = min((n * s, -s) for n, s in fits if 3 <= n <= 8)
    return [round(-step * i, 12) for i in range(round(top / -step) + 1)]


def _fmt(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e5 else f"{value:.3g}"


def line_chart(
    series: dict[str, list[tuple]],
    title: str,
    x_label: str,
    y_label: str,
    limit: tuple[float, str] | None = None,
    bar_note: str = "bars: confidence interval",
    y_max: float | None = None,
) -> str:
    """The SVG text of a chart of ``series`` (name -> [(x, y) or (x, y, low, high), ...]);
    ``limit`` is ``(y, label)`` for a horizontal line; ``bar_note`` explains the bars;
    ``y_max`` is the most the figure can be (a percentage: 100): the axis stops there."""
    points = [(p[0], p[1]) for values in series.values() for p in values]
    bars = [v for values in series.values() for p in values for v in p[2:4]]
    finite_y = [y for _, y in points if math.isfinite(y)] + [v for v in bars if math.isfinite(v)]
    if limit:
        finite_y.append(limit[0])
    x_ticks = nice_ticks(max((x for x, _ in points), default=1))
    y_high = max(finite_y, default=1) * 1.05  # the highest point clear of the top edge
    y_ticks = nice_ticks(y_high if y_max is None else min(y_high, y_max))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(x: float) -> float:
        return LEFT + plot_w * x / x_ticks[-1]

    def sy(y: float) -> float:
        return TOP + plot_h * (1 - min(y, y_ticks[-1]) / y_ticks[-1])

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{LEFT}" y="{TOP - 15}" font-size="14">{escape(title)}</text>',
    ]
    for x in x_ticks:
        out.append(
            f'<line x1="{sx(x):.1f}" y1="{TOP}" x2="{sx(x):.1f}" '
            f'y2="{TOP + plot_h}" stroke="#eee"/>'
        )
        out.append(
            f'<text x="{sx(x):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{_fmt(x)}</text>'
        )
    for y in y_ticks:
        out.append(
            f'<line x1="{LEFT}" y1="{sy(y):.1f}" x2="{LEFT + plot_w}" '
            f'y2="{sy(y):.1f}" stroke="#eee"/>'
        )
        out.append(f'<text x="{LEFT - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{_fmt(y)}</text>')
    out.append(
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" '
        f'y2="{TOP + plot_h}" stroke="black"/>'
    )
    out.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="black"/>')
    out.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 12}" '
        f'text-anchor="middle">{escape(x_label)}</text>'
    )
    out.append(
        f'<text transform="translate(18 {TOP + plot_h / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_label)}</text>'
    )
    if limit:
        out.append(
            f'<line x1="{LEFT}" y1="{sy(limit[0]):.1f}" x2="{LEFT + plot_w}" '
            f'y2="{sy(limit[0]):.1f}" stroke="#555" stroke-dasharray="6 4"/>'
            f'<text x="{LEFT + plot_w - 4}" y="{sy(limit[0]) - 5:.1f}" text-anchor="end" '
            f'fill="#555">{escape(limit[1])}</text>'
        )
    any_inf = False
    for index, (name, values) in enumerate(series.items()):
        colour = COLOURS[index % len(COLOURS)]
        coords = " ".join(f"{sx(p[0]):.1f},{sy(p[1]):.1f}" for p in values)
        out.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y, *bar in values:
            if bar and all(math.isfinite(v) for v in bar):
                out.append(
                    f'<path d="M{sx(x) - 4:.1f} {sy(bar[0]):.1f}h8M{sx(x):.1f} {sy(bar[0]):.1f}'
                    f'V{sy(bar[1]):.1f}M{sx(x) - 4:.1f} {sy(bar[1]):.1f}h8" stroke="{colour}"/>'
                )
            fill = colour if math.isfinite(y) else "white"
            any_inf |= not math.isfinite(y)
            out.append(
                f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3.5" fill="{fill}" '
                f'stroke="{colour}"/>'
            )
        ly = TOP + 10 + 18 * index
        out.append(
            f'<line x1="{WIDTH - RIGHT + 15}" y1="{ly}" x2="{WIDTH - RIGHT + 35}" '
            f'y2="{ly}" stroke="{colour}" stroke-width="2"/>'
        )
        out.append(f'<text x="{WIDTH - RIGHT + 40}" y="{ly + 4}">{escape(name)}</text>')
    ly = TOP + 10 + 18 * len(series) + 10
    if any(p[2:] for values in series.values() for p in values):
        out.append(
            f'<text x="{WIDTH - RIGHT + 15}" y="{ly}" font-size="10">{escape(bar_note)}</text>'
        )
        ly += 24
    if any_inf:
        out.append(
            f'<text x="{WIDTH - RIGHT + 15}" y="{ly}" font-size="10">上沿空心点：</text>'
            f'<text x="{WIDTH - RIGHT + 15}" y="{ly + 12}" font-size="10">'
            "∞（没有首 token）</text>"
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"
