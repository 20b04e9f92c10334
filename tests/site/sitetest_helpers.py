"""Helpers of the site tests: read the built pages back and run the engine for comparison.

The module name is unique on purpose: tests/site has no __init__.py (a package named
``site`` would shadow the standard library module).
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from grader import reference

METRICS = ("A.maxItlMs", "L.ttftMs", "S.ttftMs", "allDoneMs")


def engine_table(unit) -> dict[str, dict[str, float]]:
    """The mixed table straight from the reference engine: {policy: {metric: value}}."""
    trace = reference.load_trace(unit, "mixed")
    device = reference.device_profile(unit)
    chunk = next(p for p in unit.policies if p["name"] == "chunked")["params"]["chunk"]["default"]
    table = {}
    for policy, params in (("fcfs", {}), ("chunked", {"chunk": chunk})):
        run = reference.run_reference(unit, trace, policy, params, device)
        by_id = {r["id"]: r for r in run["requests"]}
        table[policy] = {
            "A.maxItlMs": by_id["A"]["maxItlMs"],
            "L.ttftMs": by_id["L"]["ttftMs"],
            "S.ttftMs": by_id["S"]["ttftMs"],
            "allDoneMs": run["summary"]["allDoneMs"],
        }
    return table


class _TableReader(HTMLParser):
    """Collects <td data-metric> cells of the rows of table#mixed-table."""

    def __init__(self):
        super().__init__()
        self.in_table = False
        self.policy = None
        self.metric = None
        self.rows: dict[str, dict[str, str]] = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and attrs.get("id") == "mixed-table":
            self.in_table = True
        elif self.in_table and tag == "tr" and "data-policy" in attrs:
            self.policy = attrs["data-policy"]
            self.rows[self.policy] = {}
        elif self.in_table and tag == "td" and "data-metric" in attrs:
            self.metric = attrs["data-metric"]
            self.rows[self.policy][self.metric] = ""

    def handle_endtag(self, tag):
        if tag == "table":
            self.in_table = False
        elif tag == "td":
            self.metric = None

    def handle_data(self, data):
        if self.metric:
            self.rows[self.policy][self.metric] += data


def page_table(html: str) -> dict[str, dict[str, float]]:
    reader = _TableReader()
    reader.feed(html)
    return {p: {m: float(v.strip()) for m, v in row.items()} for p, row in reader.rows.items()}


def lesson_html(site: Path) -> str:
    return (site / "unit07" / "index.html").read_text(encoding="utf-8")
