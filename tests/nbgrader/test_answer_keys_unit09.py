"""Unit 09's notebook answer keys agree with the lab's own tools run on the reference solution.

Each key is computed in-process (``answer_keys.py``); the checks run the lab's scripts
(``ex31_10.py``, ``simulate.py``, ``ex31_13.py``) in a copy of the lab folder holding the
solution files, as a student would, and compare what they print or write.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from labtools import copy_lab
from servesim.compact import expand_run

from grader.course import nbcheck
from grader.plugins import load_file
from grader.units import load_unit

UNIT = load_unit("unit09")
SETUP = load_file(UNIT.unit_dir / "notebook" / "notebook_setup.py")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The lab folder as students get it, with the reference policies.py and measure.py."""
    return copy_lab(tmp_path_factory.mktemp("lab") / "unit09", True, UNIT)


def run(lab, script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, script, *args], cwd=lab, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_fill_key_is_the_pause_that_ex31_10_prints(lab):
    key = nbcheck.answer_key(UNIT, "fill")
    printed = json.loads(run(lab, "ex31_10.py", "--json"))
    pause, resume = printed["no_deadline"]["pauses_ms"][0]
    assert key["pause_s"] == pause / 1000 and key["resume_s"] == resume / 1000
    assert key["fill_s_formula"] == pytest.approx(printed["fill_s"])
    kib = SETUP.D1["kib"]
    assert key["produce_kib_s"] == pytest.approx(printed["produce_bytes_per_s"] / kib)
    assert key["read_kib_s"] == pytest.approx(printed["read_bytes_per_s"] / kib)
    # the engine fills the buffer by whole events: one step before the closed form's 8 s
    assert 0 < key["fill_s_formula"] - key["pause_s"] <= 0.03125 + 1e-9
    assert key["tokens_before_pause"] * 384 > printed["buffer_bytes"]


def test_evidence_key_measures_the_run_simulate_writes(lab):
    spec = SETUP.D2["recompute"]
    run(
        lab,
        "simulate.py",
        *("--trace", spec["trace"], "--device-profile", spec["device"]),
        *("--policy", spec["policy"], "--output", "runs/recompute.json"),
    )
    (entry,) = json.loads((lab / "runs" / "recompute.json").read_text(encoding="utf-8"))["runs"]
    measure = load_file(UNIT.solutions_dir / "measure.py")
    keys = load_file(UNIT.unit_dir / "notebook" / "answer_keys.py")
    key = nbcheck.answer_key(UNIT, "evidence")
    assert key["figures"]["recompute"] == keys.shares(measure, expand_run(entry))
    assert sorted(key["plan"]) == sorted(SETUP.D2_RUNS)
    assert sorted(key["plan"].values()) == sorted(SETUP.D2_MEASURES)
    assert key["plan"]["recompute"] == "prefill_amplification"
    amplification = key["figures"]["recompute"]["prefill_amplification"]
    assert amplification[0] > amplification[1]  # the preemptions ran prompts again
    assert set(key["denominators"].values()) <= set(SETUP.D2_DENOMINATORS)


def test_diagnosis_key_is_what_ex31_13_prints(lab):
    key = nbcheck.answer_key(UNIT, "diagnosis")
    printed = json.loads(run(lab, "ex31_13.py", "--json"))
    situations = {s["name"]: s for s in printed["situations"]}
    assert set(situations) == set(key["causes"])
    for name, got in key["causes"].items():
        shown = situations[name]
        assert got["cause"] == shown["cause"], name
        assert got["p99_wait_ms"] == pytest.approx(shown["p99WaitMs"])
        assert got["p99_itl_ms"] == pytest.approx(shown["p99ItlMs"])
        assert got["rejected"] == shown["rejected"]["num"]
        after = {a["label"]: a for a in shown["after"]}
        assert set(after) == set(key["after"].get(name, {}))
        for label, row in key["after"].get(name, {}).items():
            assert row["cause"] == after[label]["cause"], label
            assert row["p99_wait_ms"] == pytest.approx(after[label]["p99WaitMs"])
    assert key["causes"]["light"]["cause"] == "none"
