"""The timeline figure: the submissions of several runs on one time scale, as inline SVG.

Each lane is one run; each submission is a bar whose colour says what it did (decode batch,
prefill chunk, or both). Arrivals are marked above the lane, first tokens under it, and a
lane may carry one annotated gap (a request's longest wait between two tokens). Colours come
from CSS classes so the page's light and dark themes apply; the figure carries <title> and
<desc> for screen readers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from servesim.htmlsafe import text as escape

from .runs import Gap, PolicyRun

WIDTH = 800  # viewBox units; the page shows the figure about this wide, so 13 units ~ 13 px
LABEL_W = 86
RIGHT_PAD = 16
ARRIVAL_H = 34  # arrival marks (two label rows) above each lane
LANE_H = 34
BELOW_H = 76  # first-token labels (two rows) and the gap note under each lane
TOP = 26
LABEL_SPACING = 72  # px between first-token labels ("L 首 token") before they alternate rows
ARRIVAL_SPACING = 24  # the same for arrival labels (a request id)
NARROW_SPACING = 60  # the same for the labels of bars too narrow to hold them
# Widths per character (viewBox units) at the fonts of site.css, a little generous: bar labels
# (12 px, 600) inside a bar and right of one (11 px), lane names (14 px, 700; CJK is wider).
INSIDE_CHAR, OUTSIDE_CHAR, LANE_CHAR, LANE_CJK = 8, 7.5, 10.5, 15
MIN_BAR = 3  # the least width a bar is drawn with, so a one-token prefill stays visible
FIRST_TOKEN = "首 token"
ARRIVAL = "到达"


@dataclass(frozen=True)
class Lane:
    title: str
    run: PolicyRun
    gap: Gap | None = None  # annotated under the lane ("A 最长间隔 14.75 ms")


def _fmt(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _kind(event: dict) -> str:
    if event["decode"] and event["prefill"]:
        return "both"
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


def _rows(xs: list[float], spacing: float) -> list[int]:
    """Label row (0 or 1) per position: neighbours closer than ``spacing`` alternate."""
    rows, previous, row = [], -spacing, 0
    for pos in xs:
        row = 1 - row if pos - previous < spacing else 0
        previous = pos
        rows.append(row)
    return rows


def _arrivals(run: PolicyRun, y: float, x) -> list[str]:
    out = []
    requests = sorted(run.run["requests"], key=lambda r: r["arrivalMs"])
    # requests arriving at the same instant share one label ("A、B、C")
    groups: list[list[dict]] = []
    for request in requests:
        if groups and groups[-1][0]["arrivalMs"] == request["arrivalMs"]:
            groups[-1].append(request)
        else:
            groups.append([request])
    xs = [x(g[0]["arrivalMs"]) for g in groups]
    for group, pos, row in zip(groups, xs, _rows(xs, ARRIVAL_SPACING)):
        top = y - 6 - 14 * row
        label = "、".join(r["id"] for r in group)
        for i, request in enumerate(group):
            text = f'<text x="{pos + 6:.2f}" y="{top + 4}">{escape(label)}</text>' if not i else ""
            out.append(
                f'<g class="arrival" data-request="{escape(request["id"])}" '
                f'data-ms="{_fmt(request["arrivalMs"])}"><title>{escape(request["id"])} '
                f"{ARRIVAL} {_fmt(request['arrivalMs'])} ms</title>"
                f'<line x1="{pos:.2f}" y1="{top}" x2="{pos:.2f}" y2="{y}"/>'
                f'<path d="M{pos - 4:.2f} {y - 7} L{pos + 4:.2f} {y - 7} L{pos:.2f} {y - 1} Z"/>'
                f"{text}</g>"
            )
    return out


def _first_tokens(run: PolicyRun, y: float, x) -> list[str]:
    out = []
    requests = sorted(run.run["requests"], key=lambda r: r["firstTokenMs"])
    xs = [x(r["firstTokenMs"]) for r in requests]
    for request, pos, row in zip(requests, xs, _rows(xs, LABEL_SPACING)):
        drop = 10 + 16 * row
        out.append(
            f'<g class="first-token"><line x1="{pos:.2f}" y1="{y + LANE_H}" '
            f'x2="{pos:.2f}" y2="{y + LANE_H + drop}"/>'
            f'<text x="{pos:.2f}" y="{y + LANE_H + drop + 14}" text-anchor="middle">'
            f"{escape(request['id'])} {FIRST_TOKEN}</text></g>"
        )
    return out


def _gap_note(gap: Gap, y: float, x) -> str:
    x0, x1 = x(gap.before), x(gap.after)
    line_y = y + LANE_H + 50
    text = f"{gap.request} 最长间隔 {gap.length:.2f} ms"
    middle = min(max((x0 + x1) / 2, LABEL_W + 70), WIDTH - RIGHT_PAD - 70)
    return (
        f'<g class="gap-note" data-request="{escape(gap.request)}" '
        f'data-ms="{gap.length:.2f}" data-from="{_fmt(gap.before)}" data-to="{_fmt(gap.after)}">'
        f'<line x1="{x0:.2f}" y1="{line_y}" x2="{x1:.2f}" y2="{line_y}"/>'
        f'<line x1="{x0:.2f}" y1="{line_y - 5}" x2="{x0:.2f}" y2="{line_y + 5}"/>'
        f'<line x1="{x1:.2f}" y1="{line_y - 5}" x2="{x1:.2f}" y2="{line_y + 5}"/>'
        f'<text x="{middle:.2f}" y="{line_y + 18}" text-anchor="middle">{escape(text)}</text></g>'
    )


def _short_label(event: dict) -> str:
    """The bar's label without token counts ("L", "D+L"): for a bar too narrow for the full one."""
    ids = [c["id"] for c in event["prefill"]]
    return "+".join(["D", *ids] if event["decode"] else ids)


def _bars(run: PolicyRun, y: float, x) -> list[str]:
    """One bar per submission, labelled inside; a bar too narrow for its label gets the label
    without token counts, and when that does not fit either, the full label just right of it
    in one of two rows over the lane, if the lane is idle there for the label's width (a label
    never lies over another bar). Otherwise only the bar's tooltip names it. A bar is drawn at
    least MIN_BAR wide, so that a one-token prefill stays visible."""
    out, outside = [], []
    events = run.events
    labels = [_inside_label(e, x) for e in events]
    narrow = [i for i, label in enumerate(labels) if label is None]
    rows = dict(zip(narrow, _rows([x(events[i]["endMs"]) for i in narrow], NARROW_SPACING)))
    for i, event in enumerate(events):
        x0, x1 = x(event["startMs"]), x(event["endMs"])
        tip = (
            f"{_fmt(event['startMs'])}–{_fmt(event['endMs'])} ms: "
            + ("decode " + ",".join(event["decode"]) if event["decode"] else "")
            + (" " if event["decode"] and event["prefill"] else "")
            + " ".join(f"prefill {c['id']}×{c['tokens']}" for c in event["prefill"])
        )
        out.append(
            f'<g class="ev ev-{_kind(event)}"><title>{escape(tip)}</title>'
            f'<rect x="{x0:.2f}" y="{y}" width="{max(x1 - x0 - 1, MIN_BAR):.2f}" '
            f'height="{LANE_H}" rx="{1 if x1 - x0 < 8 else 3}"/>'
        )
        if labels[i] is not None:
            out.append(
                f'<text x="{(x0 + x1) / 2:.2f}" y="{y + LANE_H / 2 + 5}" '
                f'text-anchor="middle">{escape(labels[i])}</text>'
            )
        else:  # drawn after every bar, so that the next bar does not hide it
            label, left = _bar_label(event), max(x1, x0 + MIN_BAR) + 2
            free = x(events[i + 1]["startMs"]) if i + 1 < len(events) else WIDTH - RIGHT_PAD
            if free - left >= OUTSIDE_CHAR * len(label):
                row_y = y + 12 if rows[i] == 0 else y + LANE_H - 4
                outside.append(
                    f'<text class="ev-label" x="{left:.2f}" y="{row_y}">{escape(label)}</text>'
                )
        out.append("</g>")
    return out + outside


def _inside_label(event: dict, x) -> str | None:
    """The label drawn inside the event's bar: the full one, else the short one, else None."""
    width = x(event["endMs"]) - x(event["startMs"])
    for label in (_bar_label(event), _short_label(event)):
        if width >= INSIDE_CHAR * len(label) + 4:
            return label
    return None


def _lane_title(title: str, y: float) -> str:
    """The lane's name, right-aligned left of the lane; squeezed to the label column when an
    estimate of its width says it would run past the figure's left edge."""
    room = LABEL_W - 8 - 4
    wide = sum(LANE_CJK if ord(ch) > 0x2E80 else LANE_CHAR for ch in title)
    fit = f' textLength="{room}" lengthAdjust="spacingAndGlyphs"' if wide > room else ""
    return (
        f'<text class="lane-label" x="{LABEL_W - 8}" y="{y + LANE_H / 2 + 5}" '
        f'text-anchor="end"{fit}>{escape(title)}</text>'
    )


def timeline_svg(lanes: list[Lane], title: str, desc: str, element_id: str) -> str:
    """Inline SVG of ``lanes`` on a shared time axis from 0 to the latest end."""
    span = max(lane.run.all_done for lane in lanes) or 1.0
    scale = (WIDTH - LABEL_W - RIGHT_PAD) / span

    def x(t: float) -> float:
        return LABEL_W + t * scale

    block = ARRIVAL_H + LANE_H + BELOW_H
    height = TOP + len(lanes) * block + 4
    out = [
        f'<svg id="{element_id}" class="timeline" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-labelledby="{element_id}-title {element_id}-desc" '
        f'xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{element_id}-title">{escape(title)}</title>',
        f'<desc id="{element_id}-desc">{escape(desc)}</desc>',
    ]
    axis_y = TOP - 10
    step = _tick_step(span)
    tick = 0.0
    while tick <= span + 1e-9:
        out.append(
            f'<line class="grid" x1="{x(tick):.1f}" y1="{axis_y + 4}" x2="{x(tick):.1f}" '
            f'y2="{height - 4}"/>'
            f'<text class="axis" x="{x(tick):.1f}" y="{axis_y}" text-anchor="middle">'
            f"{_fmt(tick)}</text>"
        )
        tick += step
    out.append(f'<text class="axis" x="{LABEL_W - 8}" y="{axis_y}" text-anchor="end">ms</text>')
    for i, lane in enumerate(lanes):
        y = TOP + i * block + ARRIVAL_H
        out.append(_lane_title(lane.title, y))
        out += _arrivals(lane.run, y, x)
        out += _bars(lane.run, y, x)
        out += _first_tokens(lane.run, y, x)
        if lane.gap is not None:
            out.append(_gap_note(lane.gap, y, x))
    out.append("</svg>")
    return "".join(out)
