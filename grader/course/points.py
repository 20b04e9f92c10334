"""The points table of a unit, per part: public, hidden and challenge cases, and the notebook.

    points_table(unit) -> PointsTable

Everything is computed from unit.yaml (``parts``, ``grading.cases``, ``notebook.hours``) and the
unit's nbgrader notebook (its graded cells' points, grouped under the ``## `` heading they follow),
so a new case, part or notebook question shows up without a hand edit. The table appears in the
handout (a region of the lab's README.md that ``infralab starter sync`` rewrites: ``handout_text``),
on the lesson page (``grader.sitebuild``) and in the Gradescope output (``lines``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..cases import Kind, load_grading
from ..parts import CHALLENGE, OPTIONAL, Part, unit_parts
from ..units import Unit

BEGIN = "[//]: # (BEGIN points table: written by `infralab starter sync`, do not edit by hand)"
END = "[//]: # (END points table)"
_HEADING = re.compile(r"^##\s+(.+?)\s*$", re.M)


@dataclass(frozen=True)
class PartPoints:
    part: Part
    public: float  # exact and script cases a student sees
    hidden: float
    challenge: float  # goodput cases, public and hidden


@dataclass(frozen=True)
class NotebookSection:
    title: str  # the "## " heading of the notebook the graded cells follow
    points: float


@dataclass(frozen=True)
class PointsTable:
    unit: str
    parts: tuple[PartPoints, ...]
    notebook: tuple[NotebookSection, ...]
    notebook_hours: tuple[float, float] | None

    @property
    def total(self) -> float:
        return sum(p.public + p.hidden + p.challenge for p in self.parts) + self.notebook_points

    @property
    def notebook_points(self) -> float:
        return sum(s.points for s in self.notebook)

    @property
    def cases_points(self) -> float:
        """The points of the graded cases: what ``infralab grade`` and Gradescope score."""
        return self.total - self.notebook_points

    def total_words(self) -> str:
        """The total, split into what the grader and the notebook score when both do."""
        if not self.notebook:
            return f"total {_pts(self.total)}"
        return (
            f"total {_pts(self.total)}: {_pts(self.cases_points)} for the graded cases, "
            f"{_pts(self.notebook_points)} for the notebook (nbgrader)"
        )

    def hours(self, kinds=("core",)) -> tuple[float, float]:
        """Fewest and most hours over the parts of ``kinds`` (and the notebook)."""
        spans = [p.part.hours for p in self.parts if p.part.kind in kinds and p.part.hours]
        if self.notebook_hours:
            spans.append(self.notebook_hours)
        return sum(s[0] for s in spans), sum(s[1] for s in spans)

    def lines(self) -> list[str]:
        """The table in English, one line per part (the Gradescope output, text reports)."""
        out = [f"points per part ({self.total_words()}):"]
        for row in self.parts:
            cells = [
                f"{name} {_pts(value)}"
                for name, value in (
                    ("public", row.public),
                    ("hidden", row.hidden),
                    ("challenge", row.challenge),
                )
                if value
            ]
            kind = ", optional" if row.part.kind == OPTIONAL else ""
            out.append(f"  part {row.part.number} {row.part.id}{kind}: {', '.join(cells)}")
        if self.notebook:
            out.append(f"  notebook: {_pts(self.notebook_points)}")
        return out

    def markdown(self) -> str:
        """The table for the handout (Chinese, as the handout is)."""
        # the cells are points, not case counts: the headers say so
        head = "| 部分 | 要写的函数 | 公开分 | 隐藏分 | 挑战分 | 笔记本分 | 预计用时 |"
        rows = [head, "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
        for row in self.parts:
            functions = "、".join(f"`{f}`" for f in row.part.function_names)
            rows.append(
                f"| {part_name(row.part)} · {row.part.title_zh} | {functions} | "
                f"{_cell(row.public)} | {_cell(row.hidden)} | {_cell(row.challenge)} | — | "
                f"{hours_zh(row.part.hours, row.part.kind)} |"
            )
        if self.notebook:
            sections = "；".join(f"{s.title}：{_pts(s.points)} 分" for s in self.notebook)
            rows.append(
                f"| 交付笔记本 | {sections} | — | — | — | {_pts(self.notebook_points)} | "
                f"{hours_zh(self.notebook_hours)} |"
            )
        public = sum(p.public for p in self.parts)
        hidden = sum(p.hidden for p in self.parts)
        challenge = sum(p.challenge for p in self.parts)
        low, high = self.hours()
        split = (
            f"（评分器 {_pts(self.cases_points)} 分 + 笔记本 {_pts(self.notebook_points)} 分）"
            if self.notebook
            else ""
        )
        rows.append(
            f"| **合计 {_pts(self.total)} 分**{split} | | {_pts(public)} | {_pts(hidden)} | "
            f"{_pts(challenge)} | {_pts(self.notebook_points)} | 必做部分约 {_num(low)}–"
            f"{_num(high)} 小时 |"
        )
        return "\n".join(rows)


def part_name(part: Part) -> str:
    """``第 4 部分（选做）``: how the Chinese pages name a part."""
    suffix = {OPTIONAL: "（选做）", CHALLENGE: "（挑战）"}.get(part.kind, "")
    return f"第 {part.number} 部分{suffix}"


def hours_zh(hours, kind: str = "core") -> str:
    if not hours:
        return "—"
    text = f"约 {_num(hours[0])}–{_num(hours[1])} 小时"
    return text + ("，可以更多" if kind == CHALLENGE else "")


def _num(value: float) -> str:
    return f"{value:g}"


def _pts(value: float) -> str:
    return f"{value:g}"


def _cell(value: float) -> str:
    return _pts(value) if value else "—"


def points_table(unit: Unit) -> PointsTable:
    cases = load_grading(unit).cases
    rows = []
    for part in unit_parts(unit):
        mine = [c for c in cases if c.part == part.id]
        exact = [c for c in mine if c.kind is not Kind.GOODPUT]
        rows.append(
            PartPoints(
                part,
                public=sum(c.points for c in exact if not c.hidden),
                hidden=sum(c.points for c in exact if c.hidden),
                challenge=sum(c.points for c in mine if c.kind is Kind.GOODPUT),
            )
        )
    hours = unit.doc.get("notebook", {}).get("hours")
    return PointsTable(
        unit.id, tuple(rows), notebook_sections(unit), tuple(hours) if hours else None
    )


def notebook_sections(unit: Unit) -> tuple[NotebookSection, ...]:
    """Points of the unit's nbgrader notebook(s), summed under each ``## `` heading."""
    folder = unit.unit_dir / "notebook"
    sections: dict[str, float] = {}
    for path in sorted(folder.glob("*.ipynb")) if folder.is_dir() else ():
        heading = path.stem
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell.get("source", ""))
            if cell.get("cell_type") == "markdown":
                found = _HEADING.findall(source)
                heading = found[-1] if found else heading
            points = cell.get("metadata", {}).get("nbgrader", {}).get("points")
            if points:
                sections[heading] = sections.get(heading, 0.0) + float(points)
    return tuple(NotebookSection(title, points) for title, points in sections.items())


def handout_text(unit: Unit, readme: str) -> str:
    """``readme`` with the region between the markers holding the current table (unchanged
    when the handout has no markers)."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < start:
        return readme
    table = points_table(unit).markdown()
    return f"{readme[: start + len(BEGIN)]}\n\n{table}\n\n{readme[end:]}"
