"""docs/units.md read as data: the table of where each file of a unit goes, and the smallest
unit's files, so a test can build a unit from the documentation alone.

``ROWS``: the table's rows (path forms, who writes them, whether a unit needs them: yes, no or
made). ``FILES``: the smallest unit, path -> the file's text (its code block) or the code-root
file it is a copy of. ``make_course`` writes those files into a course root.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import yaml

from grader.units import CODE_ROOT

DOC = CODE_ROOT / "docs" / "units.md"
TABLE_HEADING = "## What a unit is made of"
FILES_HEADING = "### The smallest unit"
FILE_BLOCK = re.compile(r"^`(?P<path>[^`]+)`:\n\n```[a-z]*\n(?P<body>.*?)^```$", re.M | re.S)
FILE_COPY = re.compile(r"^`(?P<path>[^`]+)`: a copy of `(?P<source>[^`]+)`\.$", re.M)


@dataclass(frozen=True)
class Row:
    """One row of the table: its path forms, who writes them and whether a unit needs them."""

    paths: tuple[str, ...]
    written_by: str
    needed: str  # yes | no | made

    def matches(self, path: str) -> bool:
        return any(re.fullmatch(_form(p), path) for p in self.paths)


def _form(path: str) -> str:
    """A table path as a regular expression: ``<name>`` stands for one path segment."""
    return "".join(
        "[^/]+" if part.startswith("<") else re.escape(part)
        for part in re.split(r"(<[^>]+>)", path)
    )


def _section(text: str, heading: str) -> str:
    """The text under ``heading`` up to the next heading of its level or above (lines in code
    blocks are not headings)."""
    lines = text.splitlines(keepends=True)
    start = lines.index(heading + "\n") + 1
    level, fenced = len(heading.split(maxsplit=1)[0]), False
    for end in range(start, len(lines)):
        fenced ^= lines[end].startswith("```")
        hashes = len(lines[end]) - len(lines[end].lstrip("#"))
        if not fenced and 0 < hashes <= level and lines[end][hashes : hashes + 1] == " ":
            return "".join(lines[start:end])
    return "".join(lines[start:])


def table(text: str) -> list[Row]:
    rows = []
    for line in _section(text, TABLE_HEADING).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| `") or len(cells) != 4:
            continue
        paths = tuple(re.findall(r"`([^`]+)`", cells[0]))
        rows.append(Row(paths, cells[2], cells[3]))
    return rows


def smallest_unit(text: str) -> dict[str, str | Path]:
    """path -> the file's text (a code block) or the code-root file it copies."""
    section = _section(text, FILES_HEADING)
    files: dict[str, str | Path] = {m["path"]: m["body"] for m in FILE_BLOCK.finditer(section)}
    files |= {m["path"]: CODE_ROOT / m["source"] for m in FILE_COPY.finditer(section)}
    return files


TEXT = DOC.read_text(encoding="utf-8")
ROWS = table(TEXT)
FILES = smallest_unit(TEXT)
UNIT_ID = yaml.safe_load(FILES["labs/toy/unit.yaml"])["id"]


def make_course(root: Path, leave_out: str | None = None) -> Path:
    """The smallest unit's files (all but ``leave_out``) in the course root ``root``."""
    for path, content in FILES.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)  # the folders stay, even left empty
        if path == leave_out:
            continue
        if isinstance(content, Path):
            shutil.copyfile(content, target)
        else:
            target.write_text(content, encoding="utf-8")
    return root
