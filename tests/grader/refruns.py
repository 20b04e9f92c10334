"""Run files made by the lab's simulate.py with the reference policies, for the schema tests."""

from __future__ import annotations

import json
from pathlib import Path

from servesim import cli

from grader import reference

# the paged policy on the 64-page pool (trace kv-pages), which both schema tests run
KV_PAGES = (
    "--trace",
    "kv-pages",
    "--policy",
    "paged",
    "--device-profile",
    "devices/kv-64-pages.json",
)


def run_file(unit, tmp_path: Path, fmt: str, *argv: str) -> dict:
    """The run file the lab's simulate.py writes with the reference policies."""
    out = tmp_path / f"{unit.id}-{fmt}-{len(list(tmp_path.iterdir()))}.json"
    argv = [str(unit.lab_dir / a) if a.startswith("devices/") else a for a in argv]
    code = cli.main(
        [*argv, "--format", fmt, "--output", str(out)],
        policies_module=reference.solution_policies(unit),
        lab_dir=unit.lab_dir,
    )
    assert code == 0
    return json.loads(out.read_text(encoding="utf-8"))
