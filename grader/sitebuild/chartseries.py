"""The data a chart is drawn from (``Series``) and the chart as a page shows it (``Chart``).

A leaf module: ``charts``, ``chartparts`` and ``charttable`` all read these types, and none of
them is imported back here.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
