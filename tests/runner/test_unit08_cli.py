"""``run_gpu.py`` / ``infralab run-gpu`` for unit 08 on CPU (tiny model), and every unit's
``run-gpu`` parser.

Every unit 08 policy runs with the unit's device fields; the run file is valid under the unit's
schema, passes the grader's verification with measured timing, and ``measure.py`` reads it.
"""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest

from grader.cli.main import main as infralab
from grader.units import load_unit, unit_ids
from grader.verify import verify_run
from grader.verify.runschema import validate_run_file

U08 = load_unit("unit08")
KV64 = U08.lab_dir / "devices" / "kv-64-pages.json"


@pytest.fixture(scope="module")
def measure():
    spec = importlib.util.spec_from_file_location("_u08_measure", U08.solutions_dir / "measure.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _run_gpu(tmp_path, capsys, *argv, code=0):
    out = tmp_path / "run.json"
    got = infralab(["run-gpu", "--unit", "unit08", "--reference", *argv, "--output", str(out)])
    printed = capsys.readouterr()
    assert got == code, printed.err
    return (json.loads(out.read_text(encoding="utf-8")) if code == 0 else None), printed


@pytest.mark.parametrize("unit_id", unit_ids())
def test_every_units_run_gpu_help_shows_the_runners_flags(unit_id, torch_cpu, capsys):
    assert infralab(["run-gpu", "--unit", unit_id, "--help"]) == 0
    out = capsys.readouterr().out
    assert "--reference" in out  # the wrapper's own flags ...
    for flag in ("--mode", "--calibrate", "--page-tokens", "--kv-pages", "--swap-long", "--trace"):
        assert flag in out, flag  # ... then the runner's


def test_run_gpu_without_a_unit(torch_cpu, capsys):
    assert infralab(["run-gpu", "--help"]) == 0
    assert "add --unit UNIT" in capsys.readouterr().out
    assert infralab(["run-gpu", "--reference", "--trace", "burst"]) == 2
    assert "--unit" in capsys.readouterr().err


def test_every_policy_runs_on_the_units_device(tmp_path, capsys, torch_cpu, measure):
    argv = ["--trace", "lifo-victim", "--device-profile", str(KV64), "--budget", "64"]
    doc, printed = _run_gpu(tmp_path, capsys, *argv, "--policy", "all")
    assert [run["policy"] for run in doc["runs"]] == [p["name"] for p in U08.policies]
    assert validate_run_file(U08, doc) is None
    for run in doc["runs"]:
        assert run["device"]["kvPages"] == 64 and run["device"]["pageTokens"] == 16
        real = run["realDevice"]
        assert real["mode"] == "replay" and real["kvCache"] == {
            "pageTokens": 16,
            "pages": 64,
            "hostPages": 0,
        }
        assert max(e["kvPagesHeld"] for e in run["events"]) <= 64
        assert verify_run(run, doc["trace"], run["device"], timing="measured") == []
        # measure.py reads the real run as it reads a simulated one
        requests = run["requests"]
        end = max(r["arrivalMs"] for r in requests) + 1
        good = measure.goodput(requests, measure.Slo(ttft_ms=1e9), 0.0, end)
        assert good.submitted == len(requests) and good.qualifying == good.succeeded
        assert measure.area_under_n(requests, 0.0, run["summary"]["allDoneMs"]) > 0
    limits = {run["policy"]: run["limits"]["budget"] for run in doc["runs"]}
    assert limits["static"] is None and limits["paged"] == 64
    assert any(e["preempt"] for run in doc["runs"] for e in run["events"])
    assert "KV cache 64 pages of 16 tokens" in printed.out


def test_live_mode_runs_on_measured_times(tmp_path, capsys, torch_cpu):
    argv = ["--trace", "lifo-victim", "--device-profile", str(KV64), "--budget", "64"]
    doc, _ = _run_gpu(tmp_path, capsys, *argv, "--policy", "paged", "--mode", "live")
    (run,) = doc["runs"]
    assert run["realDevice"]["mode"] == "live"
    for ev in run["events"]:
        assert ev["endMs"] - ev["startMs"] == pytest.approx(ev["measuredMs"], abs=1e-9)
    assert verify_run(run, doc["trace"], run["device"], timing="measured") == []
    assert validate_run_file(U08, doc) is None


def test_tier_load_and_queue_cap(tmp_path, capsys, torch_cpu):
    tier = U08.lab_dir / "tiers" / "small-paged.json"
    spec = json.loads(tier.read_text(encoding="utf-8"))
    argv = ["--trace", "burst", "--tier", str(tier), "--load", "open:200", "--requests", "12"]
    doc, _ = _run_gpu(tmp_path, capsys, *argv, "--queue-cap", "2")
    (run,) = doc["runs"]
    assert run["policy"] == spec["policy"] and run["limits"] == {
        "budget": spec["budget"],
        "queueCap": 2,
    }
    assert run["realDevice"]["kvCache"]["pages"] == spec["device"]["kvPages"]
    assert len(run["requests"]) == 12
    assert verify_run(run, doc["trace"], run["device"], timing="measured") == []


def test_closed_loop_replays_and_live_refuses(tmp_path, capsys, torch_cpu):
    argv = ["--trace", "burst", "--load", "closed:3:5", "--requests", "6", "--policy", "paged"]
    doc, _ = _run_gpu(tmp_path, capsys, *argv)
    assert len(doc["trace"]["requests"]) == 6
    (run,) = doc["runs"]
    assert verify_run(run, doc["trace"], run["device"], timing="measured") == []
    _, printed = _run_gpu(tmp_path, capsys, *argv, "--mode", "live", code=2)
    assert printed.err.count("\n") == 1 and "closed loop" in printed.err


def test_swap_needs_a_host_pool(tmp_path, capsys, torch_cpu):
    argv = ["--trace", "lifo-victim", "--policy", "paged", "--swap-long", "0"]
    _, printed = _run_gpu(tmp_path, capsys, *argv, code=2)
    assert printed.err.count("\n") == 1 and "hostPages" in printed.err
    assert not (tmp_path / "run.json").exists()


def test_calibration_fits_unit08_and_simulate_accepts_the_profile(tmp_path, capsys, torch_cpu):
    from realdevice.calibration import Calibration
    from realdevice.fit import COEFFICIENTS

    argv = ["--calibrate", "--grid", "quick", "--trace", "lifo-victim", "--policy", "paged"]
    doc, printed = _run_gpu(tmp_path, capsys, *argv, "--device-profile", str(KV64), "--quiet")
    cal = doc["calibration"]
    held = cal["summary"]["heldOut"]
    assert set(held) == {"affine", "context"}  # overall, per model
    per_term = cal["heldOut"]["perTerm"]
    assert len(per_term) == len(COEFFICIENTS)
    steps = len(cal["steps"])
    for name, term in per_term.items():
        assert term["withoutTerm"]["count"] == steps, name
        assert 0 < term["steps"] <= steps and term["heldOut"]["count"] == term["steps"]
    assert per_term["overheadMs"]["heldOut"] == held["context"]  # every step has the overhead
    # the recorded figures are what the recorded steps give
    again = Calibration.from_document(doc)
    for name, term in again.held["perTerm"].items():
        recorded = per_term[name]["withoutTerm"]["medianAbsPct"]
        assert term["withoutTerm"]["medianAbsPct"] == pytest.approx(recorded, rel=1e-9)
    assert "per term, context model" in printed.out
    assert doc["device"]["kvPages"] == 64  # the profile's pool, whatever was measured
    # a measured slope: a fit on a busy CPU can find none, and the profile then leaves it out
    assert doc["device"].get("decodeMsPerContextToken", 0.0) >= 0
    assert cal["lessonTraces"][0]["policy"] == "paged"
    profile, out = tmp_path / "run.json", tmp_path / "sim.json"
    simulate = ["simulate", "--unit", "unit08", "--reference", "--trace", "lifo-victim"]
    code = infralab(
        [*simulate, "--policy", "paged", "--device-profile", str(profile), "--output", str(out)]
    )
    assert code == 0
    sim = json.loads(out.read_text(encoding="utf-8"))
    assert sim["runs"][0]["device"] == doc["device"]


def test_compact_format_is_refused(tmp_path, capsys, torch_cpu):
    _, printed = _run_gpu(tmp_path, capsys, "--trace", "burst", "--format", "compact", code=2)
    assert "real runs are written in full" in printed.err


def test_calibration_compares_on_the_small_public_traces(torch_cpu):
    from realdevice.cli import build_run_parser
    from realdevice.runsetup import COMPARE_MAX_REQUESTS, resolve
    from servesim.labconfig import load_lab

    from grader import reference

    lab = load_lab(U08.lab_dir)
    args = build_run_parser(lab).parse_args(["--calibrate", "--output", "x.json"])
    setup = resolve(lab, args, reference.solution_policies(U08))
    sizes = {name: len(reference.load_trace(U08, name).requests) for name in lab.public_traces}
    small = [name for name, n in sizes.items() if n <= COMPARE_MAX_REQUESTS]
    assert [t.name for t in setup.traces] == small
    assert 0 < len(small) < len(sizes)  # the large traces (minutes per policy on CPU) are left out
    assert [p.name for p in setup.policies] == [p["name"] for p in U08.policies]
