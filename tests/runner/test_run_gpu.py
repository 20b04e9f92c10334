"""run_gpu.py end to end on CPU with the tiny model: run files the grader verifies, calibration."""

from __future__ import annotations

import json

import pytest

from grader import reference
from grader.verify import verify_run


def _run(unit, solution, tmp_path, *argv):
    from realdevice.cli import main

    out = tmp_path / "run.json"
    code = main([*argv, "--output", str(out)], policies_module=solution, lab_dir=unit.lab_dir)
    assert code == 0
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.parametrize("trace_name", ["mixed", "unseen"])
def test_replay_runs_exactly_the_virtual_schedule(unit, solution, torch_cpu, tmp_path, trace_name):
    import servesim

    doc = _run(unit, solution, tmp_path, "--trace", trace_name, "--chunk", "2", "--mode", "replay")
    virtual = servesim.cli.main  # the same lab's simulator, for the schedule to compare with
    sim_out = tmp_path / "virtual.json"
    assert (
        virtual(
            ["--trace", trace_name, "--chunk", "2", "--output", str(sim_out)],
            policies_module=solution,
            lab_dir=unit.lab_dir,
        )
        == 0
    )
    sim = json.loads(sim_out.read_text(encoding="utf-8"))
    for real_run, sim_run in zip(doc["runs"], sim["runs"], strict=True):
        shape = lambda ev: (ev["decode"], ev["prefill"])  # noqa: E731
        assert [shape(e) for e in real_run["events"]] == [shape(e) for e in sim_run["events"]]
        for ev, sim_ev in zip(real_run["events"], sim_run["events"], strict=True):
            assert ev["endMs"] - ev["startMs"] == pytest.approx(ev["measuredMs"], abs=1e-9)
            assert ev["virtualMs"] == pytest.approx(sim_ev["endMs"] - sim_ev["startMs"])
        assert verify_run(real_run, doc["trace"], real_run["device"], timing="measured") == []
        assert real_run["realDevice"]["mode"] == "replay"
        assert real_run["realDevice"]["model"]["name"] == "tiny"


def test_live_times_come_from_measured_durations(unit, solution, torch_cpu, tmp_path):
    doc = _run(unit, solution, tmp_path, "--trace", "mixed", "--mode", "live")
    trace = reference.load_trace(unit, "mixed")
    for run in doc["runs"]:
        assert verify_run(run, doc["trace"], run["device"], timing="measured") == []
        events = run["events"]
        for ev in events:
            assert ev["endMs"] - ev["startMs"] == pytest.approx(ev["measuredMs"], abs=1e-9)
        # the clock is the measured one: TTFT of A is its prefill's measured duration
        assert run["requests"][0]["ttftMs"] == pytest.approx(events[0]["measuredMs"], abs=1e-9)
        # measured durations are not the virtual ones, so the run is not the virtual timeline
        assert [e["measuredMs"] for e in events] != [e["virtualMs"] for e in events]
        assert isinstance(run["realDevice"]["sameScheduleAsVirtual"], bool)
    assert [r["id"] for r in doc["runs"][0]["requests"]] == [r.id for r in trace.requests]


def test_a_tampered_measured_run_is_caught(unit, solution, torch_cpu, tmp_path):
    doc = _run(unit, solution, tmp_path, "--trace", "mixed", "--mode", "replay", "--policy", "fcfs")
    run = doc["runs"][0]
    run["events"][1]["startMs"] = run["events"][0]["startMs"]  # overlaps the first submission
    assert verify_run(run, doc["trace"], run["device"], timing="measured")


def test_calibration_profile_is_accepted_by_simulate(unit, solution, torch_cpu, tmp_path, capsys):
    from realdevice.calibration import Calibration
    from servesim.cli import main as simulate_main

    report = tmp_path / "report.txt"
    argv = ["--calibrate", "--grid", "quick", "--trace", "mixed", "--report", str(report)]
    doc = _run(unit, solution, tmp_path, *argv)
    cal = doc["calibration"]
    assert set(cal["fits"]) == {"affine", "context"}
    assert cal["fits"]["affine"]["prefillMsPerContextToken"] == 0.0
    for model in ("affine", "context"):
        held = cal["summary"]["heldOut"][model]
        assert held["count"] == len(cal["steps"]) > 0 and held["medianAbsPct"] >= 0
    shapes = {row["shape"] for row in cal["steps"]}
    assert any("decode" in s and "prefill" in s for s in shapes)  # mixed steps are measured
    assert cal["lessonTraces"][0]["residuals"]
    assert doc["device"]["overheadMs"] > 0
    # the profile and the residuals are what the recorded measurements give
    again = Calibration.from_document(doc)
    assert again.profile.to_json().keys() == doc["device"].keys()
    for name, value in again.profile.to_json().items():
        assert doc["device"][name] == (pytest.approx(value, rel=1e-9) if value else value), name
    for row, fresh in zip(cal["steps"], again.held["rows"], strict=True):
        assert row["contextMs"] == pytest.approx(fresh["contextMs"], rel=1e-9)
        assert row["affineMs"] == pytest.approx(fresh["affineMs"], rel=1e-9)
    printed = capsys.readouterr().out
    assert report.read_text(encoding="utf-8") in printed
    assert again.render(cal["realDevice"]) in printed
    profile = tmp_path / "run.json"
    out = tmp_path / "sim.json"
    argv = ["--trace", "mixed", "--device-profile", str(profile), "--output", str(out)]
    assert simulate_main(argv, policies_module=solution, lab_dir=unit.lab_dir) == 0
    sim = json.loads(out.read_text(encoding="utf-8"))
    assert sim["runs"][0]["device"] == doc["device"]


def test_bad_arguments_fail_with_one_line(unit, solution, torch_cpu, tmp_path, capsys):
    from realdevice.cli import main

    code = main(["--trace", "nope"], policies_module=solution, lab_dir=unit.lab_dir)
    assert code == 2
    assert capsys.readouterr().err.count("\n") == 1
    out = tmp_path / "x"
    argv = ["--trace", "mixed", "--kv-pages", "1", "--page-tokens", "2", "--output", str(out)]
    code = main(argv, policies_module=solution, lab_dir=unit.lab_dir)
    assert code == 2  # a pool that cannot hold one request alone
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--kv-pages 1: request 'A' alone needs" in err
    # each request fits alone, the schedule does not: the engine refuses the batch
    argv[3] = "8"
    code = main(argv, policies_module=solution, lab_dir=unit.lab_dir)
    assert code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "KV pages, budget 8" in err
    assert not out.exists()
