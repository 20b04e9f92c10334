"""Every fault switch is visible in what simulate.py prints, and the run file is untouched by
the table: the printed cells of a faulty run differ from the same run without the fault."""

from __future__ import annotations

import json

import pytest
from labtools import copy_lab, simulate_cli
from servesim.faults import FAULTS


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return copy_lab(tmp_path_factory.mktemp("lab") / "lab", solution=True)


def printed_cells(lab, *args: str) -> list[list[str]]:
    """The table rows as printed (split on whitespace), without the fault footer."""
    result = simulate_cli(lab, "--trace", "mixed", *args)
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()]
    return [row for row in rows if row[:3] != ["fault", "switch", "on:"]]


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("policy", ["fcfs", "chunked"])
def test_each_fault_changes_a_printed_cell(lab, fault, policy):
    clean = printed_cells(lab, "--policy", policy)
    faulty = printed_cells(lab, "--policy", policy, "--fault", fault)
    assert len(clean) == len(faulty)
    changed = [
        (a, b) for row_a, row_b in zip(clean, faulty) for a, b in zip(row_a, row_b) if a != b
    ]
    assert changed, f"--fault {fault} prints the same table as the clean {policy} run"


def test_table_prints_submission_counts_and_a_legend(lab):
    result = simulate_cli(lab, "--trace", "prefill-only", "--output", "runs/po.json")
    document = json.loads((lab / "runs" / "po.json").read_text(encoding="utf-8"))
    lines = result.stdout.splitlines()
    for run in document["runs"]:
        label = "chunked(chunk=2)" if run["policy"] == "chunked" else run["policy"]
        totals = [line.split() for line in lines if line.startswith(label)][-1]
        assert int(totals[1]) == run["summary"]["submissions"] == len(run["events"])
    assert "legend:" in result.stdout and "'-' means undefined" in result.stdout
