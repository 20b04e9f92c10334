"""The data table under each chart: every plotted value (and its interval) as text, so no
value is only drawn."""

from __future__ import annotations

from servesim.htmlsafe import text as escape

from .chartparts import fmt
from .chartseries import Series


def with_interval(value: float, bar, inf_label: str) -> str:
    text = fmt(value, inf_label)
    return f"{text}（{fmt(bar[0])}–{fmt(bar[1])}）" if bar else text


def value_at(s: Series, x: float) -> float | None:
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
        values = [value_at(s, x) for s in series]
        if values == previous and x not in marks:
            continue
        previous = values
        cells = "".join(
            f"<td>{'—' if v is None else escape(with_interval(v, bar.get(x), inf_label))}</td>"
            for v, bar in zip(values, bars)
        )
        if marks:
            cells += f"<td>{escape('；'.join(marks.get(x, [])))}</td>"
        rows.append(f'<tr><th scope="row">{fmt(x)}</th>{cells}</tr>')
    return table_html(title, x_label, head, rows)


def table_html(title: str, first: str, head: str, rows: list[str]) -> str:
    return (
        '<details class="chart-data"><summary>图中数据（表格）</summary>'
        f'<table class="data numbers"><caption>{escape(title)}</caption>'
        f'<thead><tr><th scope="col">{escape(first)}</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></details>"
    )
