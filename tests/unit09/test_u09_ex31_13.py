"""``ex31_13.py`` (exercise 31.13 in the lab): each situation's diagnosis is the cause its trace
was built with, the action's follow-ups change what they should, and a measure.py still a stub
gives one line, not a traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader.units import REPO_ROOT

LAB = REPO_ROOT / "starter" / "unit09"
SOLUTION = REPO_ROOT / "solutions" / "unit09" / "measure.py"


def run_exercise(measure_source: str, *args: str) -> subprocess.CompletedProcess:
    """``python ex31_13.py ARGS`` in a lab-like folder holding ``measure_source`` (deleted
    afterwards: it may hold the solution)."""
    with tempfile.TemporaryDirectory(prefix="u09-ex31-13-") as folder:
        lab = Path(folder)
        for name in ("ex31_13.py", "tailruns.py", "tailruns.json"):
            shutil.copy(LAB / name, lab / name)
        (lab / "measure.py").write_text(measure_source, encoding="utf-8")
        return subprocess.run(
            [sys.executable, "ex31_13.py", *args], cwd=lab, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip


@pytest.fixture(scope="module")
def result() -> dict:
    done = run_exercise(SOLUTION.read_text(encoding="utf-8"), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def situation(result: dict, name: str) -> dict:
    return next(s for s in result["situations"] if s["name"] == name)


def test_each_situation_is_diagnosed_as_built(result):
    assert situation(result, "light")["cause"] == "none"
    assert situation(result, "overload")["cause"] == "overload"
    assert situation(result, "long prompts")["cause"] == "prefill blocking decode"
    slow = situation(result, "slow clients")
    assert "skipped" in slow or slow["cause"] == "slow clients"


def test_follow_ups_do_what_the_action_says(result):
    capped, *capacity = situation(result, "overload")["after"]
    assert capped["rejected"]["num"] > 0 and capped["rejected"]["den"] == 60
    assert capped["p99WaitMs"] < situation(result, "overload")["p99WaitMs"]
    assert capacity[-1]["cause"] == "none", "enough slots: the tail is back to the baseline's"
    before = situation(result, "long prompts")
    chunked = before["after"]
    assert all(a["p99ItlMs"] < before["p99ItlMs"] for a in chunked)
    assert chunked[-1]["cause"] != "prefill blocking decode"


def test_text_prints_every_diagnosis_and_action():
    done = run_exercise(SOLUTION.read_text(encoding="utf-8"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("diagnosis: ") >= 8
    assert "action: arrivals exceed what the device serves" in done.stdout


def test_a_stub_is_one_line():
    stub = SOLUTION.read_text(encoding="utf-8").replace(
        "    ev = evidence(run)\n\n    def verdict",
        "    raise NotImplementedError('diagnose')\n    ev = evidence(run)\n\n    def verdict",
    )
    assert stub != SOLUTION.read_text(encoding="utf-8")
    done = run_exercise(stub)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
