"""Print the slowest tests of one or more pytest JUnit XML reports, slowest first.

    python scripts/slowest_tests.py N REPORT.xml [REPORT.xml ...]

``scripts/test.sh`` calls it after the whole suite (both passes): each test's time is its
setup, call and teardown together, as pytest's ``--junitxml`` records it. Standard library only.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def slowest(reports: list[Path], count: int) -> list[tuple[float, str]]:
    """(seconds, test id) of the ``count`` slowest test cases in ``reports``."""
    found = []
    for report in reports:
        for case in ET.parse(report).iter("testcase"):
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            found.append((float(case.get("time") or 0.0), name))
    return sorted(found, reverse=True)[:count]


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        print("usage: slowest_tests.py N REPORT.xml [REPORT.xml ...]", file=sys.stderr)
        return 2
    reports = [Path(p) for p in argv[1:] if Path(p).is_file()]
    rows = slowest(reports, int(argv[0]))
    print(f"[test] the slowest {len(rows)} tests (setup + call + teardown):")
    for seconds, name in rows:
        print(f"  {seconds:8.2f} s  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
