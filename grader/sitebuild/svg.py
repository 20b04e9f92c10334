"""The timeline figure: the submissions of several runs on one time scale, as inline SVG.

Each lane is one run; each submission is a bar whose colour says what it did (decode batch,
prefill chunk, or both). First tokens are marked under the lane. Colours come from CSS classes
so the page's light and dark themes apply; the figure carries <title> and <desc> for screen
readers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

from .runs import PolicyRun

WIDTH = 960
LABEL_W = 92
RIGHT_PAD = 16
LANE_H = 34
LANE_GAP = 52
TOP = 34
LABEL_SPACING = 48  # px between first-token labels before they alternate rows


@dataclass(frozen=True)
class Lane:
    title: str
    run: PolicyRun


def _fmt(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _kind(event: dict) -> str:
    if event["decode"] and event["prefill"]:
        return "mixed"
    return "decode" if event["decode"] else "prefill"


def _bar_label(event: dict) -> str:
    parts = [f"{c['id']}×{c['tokens']}" for c in event["prefill"]]
    if event["decode"]:
        parts.insert(0, "D")
    return "+".join(parts)


def _tick_step(span: float) -> float:
    raw = span / 8
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def timeline_svg(lanes: list[Lane], title: str, desc: str, element_id: str) -> str:
    """Inline SVG of ``lanes`` on a shared time axis from 0 to the latest end."""
    span = max(lane.run.all_done for lane in lanes) or 1.0
    scale = (WIDTH - LABEL_W - RIGHT_PAD) / span

    def x(t: float) -> float:
        return LABEL_W + t * scale

    height = TOP + len(lanes) * (LANE_H + LANE_GAP) + 10
    out = [
        f'<svg id="{element_id}" class="timeline" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-labelledby="{element_id}-title {element_id}-desc" '
        f'xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{element_id}-title">{escape(title)}</title>',
        f'<desc id="{element_id}-desc">{escape(desc)}</desc>',
    ]
    axis_y = TOP - 14
    step = _tick_step(span)
    tick = 0.0
    while tick <= span + 1e-9:
        out.append(
            f'<line class="grid" x1="{x(tick):.1f}" y1="{axis_y + 4}" x2="{x(tick):.1f}" '
            f'y2="{height - 8}"/>'
            f'<text class="axis" x="{x(tick):.1f}" y="{axis_y}" text-anchor="middle">'
            f"{_fmt(tick)}</text>"
        )
        tick += step
    out.append(f'<text class="axis" x="{LABEL_W - 8}" y="{axis_y}" text-anchor="end">ms</text>')
    for i, lane in enumerate(lanes):
        y = TOP + i * (LANE_H + LANE_GAP)
        out.append(
            f'<text class="lane-label" x="{LABEL_W - 8}" y="{y + LANE_H / 2 + 5}" '
            f'text-anchor="end">{escape(lane.title)}</text>'
        )
        for event in lane.run.events:
            x0, x1 = x(event["startMs"]), x(event["endMs"])
            kind = _kind(event)
            label = _bar_label(event)
            tip = (
                f"{_fmt(event['startMs'])}–{_fmt(event['endMs'])} ms: "
                + ("decode " + ",".join(event["decode"]) if event["decode"] else "")
                + (" " if event["decode"] and event["prefill"] else "")
                + " ".join(f"prefill {c['id']}×{c['tokens']}" for c in event["prefill"])
            )
            out.append(
                f'<g class="ev ev-{kind}"><title>{escape(tip)}</title>'
                f'<rect x="{x0:.2f}" y="{y}" width="{max(x1 - x0 - 1, 1):.2f}" '
                f'height="{LANE_H}" rx="3"/>'
            )
            if x1 - x0 >= 8 * len(label) + 4:
                out.append(
                    f'<text x="{(x0 + x1) / 2:.2f}" y="{y + LANE_H / 2 + 5}" '
                    f'text-anchor="middle">{escape(label)}</text>'
                )
            out.append("</g>")
        previous = -LABEL_SPACING
        row = 0
        for request in sorted(lane.run.run["requests"], key=lambda r: r["firstTokenMs"]):
            t = request["firstTokenMs"]
            # Labels of first tokens that land close together alternate between two rows.
            row = 1 - row if x(t) - previous < LABEL_SPACING else 0
            previous = x(t)
            drop = 10 + 12 * row
            out.append(
                f'<g class="first-token"><line x1="{x(t):.2f}" y1="{y + LANE_H}" '
                f'x2="{x(t):.2f}" y2="{y + LANE_H + drop}"/>'
                f'<text x="{x(t):.2f}" y="{y + LANE_H + drop + 12}" text-anchor="middle">'
                f"{escape(request['id'])} 首字</text></g>"
            )
    out.append("</svg>")
    return "".join(out)
