"""The page and token rules are written once, in ``servesim``: the trusted replay drives the
engine's own state (``servesim.state.EngineState``, whose prefix cache and tallies count the
pages), the live runner applies a step to its copy of the prefix cache as the engine does
(``BlockPool.apply_batch``), and its replay mode steps the virtual run's batches through
``servesim.recorded.Recorded``. None calls the rule functions underneath them itself, so a
rule that changes in ``servesim`` changes for all."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DRIVERS = [
    *sorted((REPO / "grader" / "verify").glob("replay*.py")),
    REPO / "realdevice" / "livepages.py",
    REPO / "realdevice" / "runner.py",
]
# what a driver would call if it applied the page rules itself instead of driving servesim's code
RULES = {"pages_for", "pages_added", "occupancy_after", "Occupancy", "step_ops", "apply_step"}
RULES |= {"take_prefill", "take_decode", "take_hit", "drop_cache"}  # a request's token rules


def _names(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("path", DRIVERS, ids=lambda p: p.name)
def test_driver_applies_no_page_rule_itself(path):
    used = sorted(_names(path) & RULES)
    assert not used, f"{path.relative_to(REPO)} applies page rules itself: {used}"


def test_the_replay_and_the_live_runner_drive_servesims_page_code():
    replay = _names(REPO / "grader" / "verify" / "replay.py")
    assert {"Recorded", "gap", "step"} <= replay  # it steps the engine's own state...
    recorded = _names(REPO / "servesim" / "recorded.py")
    assert {"EngineState", "run_step", "check_batch"} <= recorded  # ...its checks and its step
    assert "apply_batch" in _names(REPO / "realdevice" / "livepages.py")
    assert {"Recorded", "gap", "step"} <= _names(REPO / "realdevice" / "runner.py")
