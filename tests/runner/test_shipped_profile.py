"""The calibration examples shipped in the labs (``devices/cpu-tiny.json`` and its report, in
units 07 and 08) are what ``run_gpu.py --calibrate`` wrote: each profile and its residuals follow
from the steps it recorded, its report is the command's, and the context-aware fit beats the
affine one on held-out steps. Unit 08's lesson re-runs its cheapest-tier search on that unit's
file (labs/unit08/lesson_calibrated.py), so a new calibration also makes the lesson cache stale.

Regenerate a unit's files with (about five minutes on one CPU core; U is unit07 or unit08)::

    infralab run-gpu --unit U --reference --calibrate --grid cpu \\
      --output starter/U/devices/cpu-tiny.json --report starter/U/devices/cpu-tiny.txt
"""

from __future__ import annotations

import json

import pytest

from grader import reference
from grader.units import load_unit


@pytest.fixture(scope="module", params=["unit07", "unit08"])
def unit(request):
    return load_unit(request.param)


@pytest.fixture(scope="module")
def torch_cpu():
    torch = pytest.importorskip("torch", reason="PyTorch not installed (extra 'runner')")
    torch.set_num_threads(1)
    return torch


@pytest.fixture(scope="module")
def shipped(unit):
    folder = unit.lab_dir / "devices"
    doc = json.loads((folder / "cpu-tiny.json").read_text(encoding="utf-8"))
    return doc, (folder / "cpu-tiny.txt").read_text(encoding="utf-8")


def test_context_aware_fit_has_the_lower_held_out_error(shipped):
    doc, _ = shipped
    cal = doc["calibration"]
    held = cal["summary"]["heldOut"]
    assert held["context"]["medianAbsPct"] < held["affine"]["medianAbsPct"]
    assert held["context"]["count"] == held["affine"]["count"] == len(cal["steps"])
    assert cal["grid"]["shapes"] and cal["realDevice"]["timing"] == "process-cpu-time"
    assert any("decode" in s and "prefill" in s for s in cal["grid"]["shapes"])
    assert doc["device"]["prefillMsPerContextToken"] > 0
    assert doc["device"]["decodeMsPerContextToken"] > 0


def test_profile_and_residuals_follow_from_the_recorded_steps(shipped, torch_cpu):
    from realdevice.calibration import Calibration, coefficients

    doc, _ = shipped
    cal = doc["calibration"]
    again = Calibration.from_document(doc)
    assert again.profile.to_json().keys() == doc["device"].keys()
    for name, value in again.profile.to_json().items():
        assert doc["device"][name] == (pytest.approx(value, rel=1e-9) if value else value), name
    for model, profile in again.fits.items():
        assert coefficients(profile) == pytest.approx(cal["fits"][model], rel=1e-9, abs=1e-15)
        for key, value in again.summary()["heldOut"][model].items():
            assert cal["summary"]["heldOut"][model][key] == pytest.approx(value, rel=1e-9)
    for row, fresh in zip(cal["steps"], again.held["rows"], strict=True):
        assert (row["contextMs"], row["affineMs"]) == pytest.approx(
            (fresh["contextMs"], fresh["affineMs"]), rel=1e-9
        )


def test_report_is_the_one_the_command_printed(shipped, torch_cpu):
    from realdevice.calibration import Calibration

    doc, report = shipped
    again = Calibration.from_document(doc)
    assert report.startswith(again.render(doc["calibration"]["realDevice"]))


def test_simulate_runs_on_the_shipped_profile(unit, tmp_path, shipped):
    from servesim.cli import main as simulate_main

    solution = reference.solution_policies(unit)
    doc, _ = shipped
    out = tmp_path / "run.json"
    profile = unit.lab_dir / "devices" / "cpu-tiny.json"
    argv = ["--trace", "unseen", "--device-profile", str(profile), "--output", str(out)]
    assert simulate_main(argv, policies_module=solution, lab_dir=unit.lab_dir) == 0
    run = json.loads(out.read_text(encoding="utf-8"))["runs"][0]
    assert run["device"] == doc["device"]  # the context coefficients are recorded
