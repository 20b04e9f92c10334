"""A batch's report files: where each submission's reports go, their format, and whether a
report from an earlier run stands.

    out/reports/<name>.json   the student view (no hidden case ids, no staff detail)
    out/staff/<name>.json     the staff view

Every folder is 0700 and every file 0600.
"""

from __future__ import annotations

import json
from pathlib import Path

REPORTS = "reports"
STAFF = "staff"
REPORT_FORMAT = 2
PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def report_path(out: Path, name: str) -> Path:
    return Path(out) / REPORTS / f"{name}.json"


def read_report(path: Path) -> dict | None:
    """A report of ours, or None when it is missing or not one of ours (then: grade again)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("batchFormat") != REPORT_FORMAT:
        return None
    return doc


def is_finished(doc: dict | None, fingerprint: dict) -> bool:
    """Whether a report stands: graded (not an environment error) from the same inputs."""
    return bool(doc) and not doc.get("environmentError") and doc.get("fingerprint") == fingerprint
