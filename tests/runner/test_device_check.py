"""``benchmarks/device_check.sh``: the quick CPU mode runs end to end (as CI runs it), and every
run of the full GPU mode resolves, so the day a GPU is lent the check works the first time."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from grader.units import REPO_ROOT

SCRIPT = REPO_ROOT / "benchmarks" / "device_check.sh"


def _module():
    path = REPO_ROOT / "benchmarks" / "device_check.py"
    spec = importlib.util.spec_from_file_location("_bench_device_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check(tmp_path, *argv, timeout):
    out = tmp_path / "check.json"
    done = subprocess.run(
        ["bash", str(SCRIPT), *argv, "--output", str(out)],
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout, json.loads(out.read_text(encoding="utf-8"))


def _assert_report(printed: str, doc: dict, mode: str):
    assert doc["mode"] == mode
    held = doc["calibration"]["heldOut"]
    assert held["context"]["count"] > 0 and held["context"]["medianAbsPct"] >= 0
    assert set(doc["calibration"]["perTerm"]) >= {"decodeMsPerContextToken", "overheadMs"}
    # a fit of 0 is left out of the profile, as every default is (measured on a noisy CPU it
    # can come out 0)
    assert doc["profile"].get("decodeMsPerContextToken", 0.0) >= 0
    assert doc["bandwidth"]["gbps"] > 0
    for point in doc["decode"]:  # on CPU far below the bound; a GPU's caches may beat HBM
        assert point["tokens_per_s"] > 0 and point["fractionOfRoofline"] > 0
        assert mode == "full" or point["fractionOfRoofline"] < 1
    assert doc["prefill"] and all(p["tokens_per_s"] > 0 for p in doc["prefill"])
    assert {entry["unit"] for entry in doc["units"]} == {"unit07", "unit08", "unit09"}
    for entry in doc["units"]:
        for run in entry["runs"]:
            assert not run["truncated"] and run["verified"], run
            assert run["ttft"]["realMeanMs"] > 0 and run["ttft"]["simMeanMs"] > 0
            if entry["unit"] == "unit08":  # the real pool is the profile's M
                assert run["kvPages"] in (64, 256) and run["maxKvPagesHeld"] <= run["kvPages"]
            if entry["unit"] == "unit09":  # the lab's pool of 40 pages, prefix caching on
                assert run["kvPages"] == 40 and run["maxKvPagesHeld"] <= 40
    printed_texts = ("held-out steps", "per term", "roofline", "prefill throughput", "TTFT real")
    for text in (*printed_texts, "ITL  real", "verified"):
        assert text in printed, text


def test_quick_mode_runs_on_cpu(tmp_path, torch_cpu):
    printed, doc = _check(tmp_path, "--quick", "--device", "cpu", timeout=280)
    _assert_report(printed, doc, "quick")
    assert doc["realDevice"]["model"]["name"] == "tiny"


def test_quick_mode_takes_a_checkpoint_folder(tmp_path, torch_cpu):
    """``--model FOLDER``: a small Qwen2 saved by transformers, checked end to end on CPU."""
    from hf_tiny import save_model

    folder = tmp_path / "qwen2-tiny"
    save_model(folder, "qwen2-bias-tied")
    printed, doc = _check(
        tmp_path, "--quick", "--device", "cpu", "--model", str(folder), timeout=280
    )
    _assert_report(printed, doc, "quick")
    assert doc["realDevice"]["model"]["checkpoint"]["architecture"] == "Qwen2ForCausalLM"


def test_every_full_mode_run_resolves(torch_cpu):
    check = _module()
    args = check.parse_args(["--device", "cpu"])
    args.model = "small"
    for unit_id, flags in check.QUICK_RUNS + check.FULL_RUNS:
        *_, setup = check.lesson_setup(unit_id, flags, args)
        assert setup.policies and setup.trace is not None
        if unit_id == "unit08":
            assert setup.profile.kv_pages in (64, 256)
    with pytest.raises(SystemExit):
        check.parse_args(["--budget-s", "0"])


def test_full_mode_on_cuda(tmp_path, torch_cpu):
    """The full check on a GPU (CPU twin: test_quick_mode_runs_on_cpu)."""
    if not torch_cpu.cuda.is_available():
        pytest.skip("needs a CUDA GPU (torch.cuda.is_available() is False)")
    printed, doc = _check(tmp_path, timeout=330)
    _assert_report(printed, doc, "full")
    assert doc["totalS"] < 300
