"""Unit 08's notebook answer keys agree with the lab's own tools run on the reference solution.

Each key is computed in-process (``answer_keys.py``); the checks run the commands the notebook
runs (``simulate.py``, ``sweep.py``) in a copy of the lab folder holding the solution files and
read the engine's run-file summaries and sweep.py's printed choice.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from labtools import copy_lab
from servesim.compact import expand_run

from grader.course import nbcheck
from grader.plugins import load_file
from grader.units import load_unit

UNIT = load_unit("unit08")
SETUP = load_file(UNIT.unit_dir / "notebook" / "notebook_setup.py")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The lab folder as students get it, with the reference policies.py and measure.py."""
    return copy_lab(tmp_path_factory.mktemp("lab") / "unit08", True, UNIT)


def run(lab, script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, script, *args], cwd=lab, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def simulate(lab, output: str, *args: str) -> dict:
    run(lab, "simulate.py", *args, "--output", output)
    (entry,) = json.loads((lab / output).read_text(encoding="utf-8"))["runs"]
    return expand_run(entry)  # large runs are written compact (requests as columns)


def test_goodput_key_counts_match_the_engines_summary(lab):
    d1 = SETUP.D1
    key = nbcheck.answer_key(UNIT, "goodput")
    assert set(key) == set(d1["policies"])
    for policy in d1["policies"]:
        entry = simulate(
            lab,
            f"runs/{policy}.json",
            *("--trace", d1["trace"], "--device-profile", d1["device"]),
            *("--queue-cap", str(d1["queue_cap"]), "--policy", policy),
        )
        summary, got = entry["summary"], key[policy]
        # the window (no warm-up, a cool-down of one) leaves out the last request to arrive
        last = max(entry["requests"], key=lambda r: r["arrivalMs"])
        assert got["submitted"] == summary["requests"] - 1
        assert got["rejected"] == summary["rejected"] - (last["status"] == "rejected") > 0
        assert got["cancelled"] == summary["cancelled"] - (last["status"] == "cancelled") > 0
        assert got["succeeded"] == summary["completed"] - (last["status"] == "completed")
        assert 0 < got["qualifying"] < got["succeeded"]  # the SLO turns some successes away
        arrivals = sorted(r["arrivalMs"] for r in entry["requests"])
        window_s = (arrivals[-1] - arrivals[0]) / 1000
        assert got["goodput_per_s"] == pytest.approx(got["qualifying"] / window_s)
        assert got["attainment_submitted"] < got["attainment_succeeded"]


def test_protocol_key_matches_the_loops_run_by_simulate(lab):
    d2 = SETUP.D2
    key = nbcheck.answer_key(UNIT, "protocol")
    protocol = json.loads((lab / d2["protocol"]).read_text(encoding="utf-8"))
    common = ("--protocol", d2["protocol"], "--tier", d2["tier"])
    closed = simulate(lab, "runs/closed.json", *common, "--replication", "1")
    assert len(closed["requests"]) == protocol["requestsPerRun"]
    assert key["replications"] == len(protocol["seeds"])
    # Little's law on the closed loop's cycle: the two estimates of its rate agree roughly
    assert key["rate"]["little"] == pytest.approx(key["rate"]["measured"], rel=0.1)
    rate = round(key["rate"]["measured"], 2)
    opened = simulate(
        lab, "runs/open.json", *common, "--replication", "1", "--load", f"open:{rate}"
    )
    warm, cool = protocol["warmupRequests"], protocol["cooldownRequests"]
    for entry in (closed, opened):
        arrivals = sorted(r["arrivalMs"] for r in entry["requests"])
        start, end = arrivals[warm], arrivals[len(arrivals) - cool]
        inside = [r for r in entry["requests"] if start <= r["arrivalMs"] < end]
        assert len(inside) == protocol["requestsPerRun"] - warm - cool
    assert 0 <= key["open_above_p99"] <= key["replications"]
    little = key["little"]
    assert little["area_ms"] == pytest.approx(little["clipped_residence_ms"])


CHOICE = re.compile(r"^(\S+)\s+up to (\S+): goodput (\S+)±\S+ req/s, \$(\S+) per 1,000", re.M)


def sweep_choice(lab, protocol: str) -> dict:
    """sweep.py's own choice: per tier (load, goodput, cost) or None, and the cheapest tier."""
    d3 = SETUP.D3
    out = run(lab, "sweep.py", "--protocol", protocol, "--jobs", "2", "--out", "runs/sweep")
    points = {tier: None for tier in d3["tiers"]}
    for tier, load, goodput, cost in CHOICE.findall(out):
        points[tier] = (float(load), float(goodput), float(cost))
    (cheapest,) = re.findall(r"^cheapest feasible tier: (.+)$", out, re.M)
    if cheapest.startswith("none"):
        cheapest = None
    elif cheapest.startswith(SETUP.NOT_YET_KNOWN):
        cheapest = SETUP.NOT_YET_KNOWN
    return {"points": points, "cheapest": cheapest}


def test_sweep_key_makes_the_choice_sweep_py_makes(lab):
    d3 = SETUP.D3
    key = nbcheck.answer_key(UNIT, "sweep")
    doc = json.loads((lab / d3["protocol"]).read_text(encoding="utf-8"))
    (lab / "runs").mkdir(exist_ok=True)
    for label, targets in d3["targets"].items():
        protocol = f"runs/{label}.json"
        (lab / protocol).write_text(json.dumps({**doc, "targets": targets}), encoding="utf-8")
        expected = sweep_choice(lab, protocol)
        assert key[label]["cheapest"] == expected["cheapest"], label
        for tier, point in expected["points"].items():
            got = key[label]["points"][tier]
            if point is None:
                assert got is None, (label, tier)
                continue
            load, goodput, cost = point
            assert got["load"] == load
            assert round(got["goodput_per_s"], 2) == goodput
            assert round(got["cost_per_1000"], 4) == cost


def nbcheck_cli(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-I", "-m", "grader.course.nbcheck", *args, "--unit", "unit08"]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def test_policy_grading_takes_every_editable_file():
    """The reference files score full marks; the starter's stubs score nothing."""
    reference = nbcheck.grade_policies(UNIT, [UNIT.solutions_dir / n for n in UNIT.editable])
    assert reference["score"] == reference["maxScore"] > 0
    stubs = nbcheck.grade_policies(UNIT, [UNIT.lab_dir / n for n in UNIT.editable])
    assert stubs["score"] == 0


def test_policy_grading_refuses_a_file_the_unit_does_not_take(tmp_path):
    other = tmp_path / "sweep.py"
    other.write_text("print('hi')\n")
    done = nbcheck_cli(
        "policies", "--submission", str(UNIT.solutions_dir / "policies.py"), str(other)
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"nbcheck: error: {other}: not an editable file of unit08 (policies.py, measure.py)"
    ]


def test_model_answers_claims_are_checked_when_the_notebook_is_built():
    """The model answers state comparisons; keys that contradict one stop the build."""
    builder = load_file(UNIT.unit_dir / "notebook" / "build_notebook.py")
    keys = builder.answer_keys()
    assert builder.render(keys) == builder.NOTEBOOK.read_text(encoding="utf-8")
    loops = keys["protocol"]["loops"]
    loops["closed"], loops["open"] = loops["open"], loops["closed"]
    with pytest.raises(ValueError, match="the open loop's mean attainment is lower"):
        builder.render(keys)
