"""``run_gpu.py`` / ``infralab run-gpu`` for unit 09 on CPU (tiny model): every unit 09 policy
runs on the lab's device (prefix caching, a pool of 40 pages) with shared prefixes and client
cancels; the run file is valid under the unit's schema and its real cache ends empty; a live
run passes the grader's verification with measured timing."""

from __future__ import annotations

import json

from grader.cli.main import main as infralab
from grader.units import load_unit
from grader.verify import verify_run
from grader.verify.runschema import validate_run_file

U09 = load_unit("unit09")


def _trace_file(tmp_path):
    system = [{"id": "system", "tokens": 48}]
    rows = [
        {"id": "a", "arrivalMs": 0, "inputTokens": 60, "outputTokens": 4, "prefix": system},
        {"id": "b", "arrivalMs": 2, "inputTokens": 52, "outputTokens": 4, "prefix": system},
        {"id": "c", "arrivalMs": 3, "inputTokens": 40, "outputTokens": 6, "cancelMs": 25},
        {"id": "d", "arrivalMs": 30, "inputTokens": 50, "outputTokens": 3, "prefix": system},
    ]
    path = tmp_path / "small.json"
    path.write_text(json.dumps({"name": "small", "requests": rows}), encoding="utf-8")
    return path


def _run_gpu(tmp_path, capsys, *argv):
    out = tmp_path / "run.json"
    got = infralab(["run-gpu", "--unit", "unit09", "--reference", *argv, "--output", str(out)])
    printed = capsys.readouterr()
    return got, printed, (json.loads(out.read_text(encoding="utf-8")) if out.exists() else None)


def test_every_unit09_policy_runs_on_the_real_cache(tmp_path, capsys, torch_cpu):
    trace = _trace_file(tmp_path)
    got, printed, doc = _run_gpu(tmp_path, capsys, "--trace", str(trace), "--policy", "all")
    assert got == 0, printed.err
    assert [run["policy"] for run in doc["runs"]] == [p["name"] for p in U09.policies]
    assert validate_run_file(U09, doc) is None
    for run in doc["runs"]:
        assert run["realDevice"]["kvCache"]["pages"] == 40 == run["device"]["kvPages"]
        assert run["events"][-1]["kvPagesHeld"] == 0
        statuses = {r["id"]: r["status"] for r in run["requests"]}
        assert statuses["c"] == "cancelled"
        hits = sum(c.get("cached", 0) for e in run["events"] for c in e["prefill"])
        claims = run["policy"] in ("prefix_paged", "prefix_admit")  # the others claim no hits
        assert hits == (96 if claims else 0)  # b and d: 3 pages each
    assert "KV cache 40 pages of 16 tokens" in printed.out


def test_live_mode_decides_on_the_measured_clock(tmp_path, capsys, torch_cpu):
    trace = _trace_file(tmp_path)
    argv = ("--trace", str(trace), "--policy", "prefix_paged", "--mode", "live")
    got, printed, doc = _run_gpu(tmp_path, capsys, *argv)
    assert got == 0, printed.err
    (run,) = doc["runs"]
    assert run["realDevice"]["mode"] == "live" and run["events"][-1]["kvPagesHeld"] == 0
    assert validate_run_file(U09, doc) is None
    assert verify_run(run, doc["trace"], run["device"], timing="measured") == []
