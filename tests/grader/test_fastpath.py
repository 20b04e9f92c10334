"""The staff fast path against the lab engine: identical run entries, token times and events.

Every comparison is ``==`` on whole run entries (token times, events, per-request metrics and
the summary), the fast side expanded from its compact form. Traces: the lesson and hidden
traces of unit 07, random traces (hypothesis), and 1,000 requests of the Azure conversation
trace (``tests/data``), with and without the active cap K and the page pool M.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import servesim
from hypothesis import given, settings
from hypothesis import strategies as st
from labtools import affine_devices, rows_trace

from grader import fastpath, reference
from grader.units import load_unit

U07, U08 = load_unit("unit07"), load_unit("unit08")
AZURE = Path(__file__).resolve().parent.parent / "data" / "azure-conv-1000.json"
AFFINE = {"prefill_ms_per_token": 0.1, "decode_batch_ms": 20.0, "decode_ms_per_seq": 0.05}


def lab_or_error(unit, trace, policy, params, device):
    """The lab engine's run entry, or the PolicyError it raised."""
    try:
        return reference.run_reference(unit, trace, policy, params, device)
    except servesim.PolicyError as exc:
        return exc


def assert_same(unit, trace, policy, params, device):
    """The fast path equals the lab engine, or declines exactly where the lab engine fails."""
    lab = lab_or_error(unit, trace, policy, params, device)
    extended = unit is U08
    fast = fastpath.reference_run(unit, policy, params, trace, device, "full", extended)
    if isinstance(lab, Exception):
        assert fast is None, f"the lab engine failed ({lab}) but the fast path ran"
        return None
    assert fast is not None, "the fast path declined a run the lab engine completed"
    assert fast == lab
    return lab


UNIT07_TRACES = [
    "mixed",
    "prefill-only",
    "unseen",
    *(p.stem for p in U07.traces_dir.glob("hidden/*.json")),
]


@pytest.mark.parametrize("name", UNIT07_TRACES)
@pytest.mark.parametrize(
    "policy, params", [("fcfs", {}), ("chunked", {"chunk": 1}), ("chunked", {"chunk": 3})]
)
@pytest.mark.parametrize("overhead", [0.25, 0.0])
def test_unit07_traces(name, policy, params, overhead):
    trace = reference.load_trace(U07, name)
    device = reference.device_profile(U07, overhead_ms=overhead)
    assert assert_same(U07, trace, policy, params, device) is not None


rows = st.lists(
    st.tuples(st.integers(0, 60).map(lambda q: q / 4), st.integers(1, 40), st.integers(1, 10)),
    min_size=1,
    max_size=12,
)
devices = affine_devices(max_active=st.one_of(st.none(), st.integers(1, 5)))


@settings(max_examples=80, deadline=None)
@given(rows=rows, device=devices, chunk=st.integers(1, 8), fcfs=st.booleans())
def test_unit07_random(rows, device, chunk, fcfs):
    policy, params = ("fcfs", {}) if fcfs else ("chunked", {"chunk": chunk})
    assert_same(U07, rows_trace(rows), policy, params, device)


@settings(max_examples=80, deadline=None)
@given(
    rows=rows,
    device=devices,
    budget=st.integers(1, 48),
    pool=st.one_of(st.none(), st.integers(0, 12)),
)
def test_budgeted_random(rows, device, budget, pool):
    trace = rows_trace(rows)
    if pool is not None:  # at least one request's reservation, up to plenty
        need = max(device.pages_for(r.input_tokens + r.output_tokens) for r in trace.requests)
        device = replace(device, kv_pages=need + pool)
    assert_same(U08, trace, "budgeted", {"budget": budget}, device)


@pytest.fixture(scope="module")
def azure():
    return servesim.read_trace_file(AZURE)


@pytest.mark.parametrize(
    "cap, pool, budget",
    [(128, None, 512), (None, None, 512), (16, 2000, 256), (None, 1500, 512)],
    ids=["the-vidur-job", "no-limits", "K16-M2000-B256", "M1500"],
)
def test_azure_budgeted(azure, cap, pool, budget):
    device = servesim.DeviceProfile(**AFFINE, max_active=cap, kv_pages=pool)
    lab = assert_same(U08, azure, "budgeted", {"budget": budget}, device)
    assert lab["summary"]["completed"] == len(azure.requests)


@pytest.mark.parametrize("policy, params", [("fcfs", {}), ("chunked", {"chunk": 256})])
def test_azure_unit07(azure, policy, params):
    device = servesim.DeviceProfile(**AFFINE)
    assert assert_same(U07, azure, policy, params, device) is not None


def test_declines_what_it_does_not_cover(azure):
    """Per-context costs, a page pool for policies that do not reserve, other policies."""
    context = servesim.DeviceProfile(**AFFINE, decode_ms_per_context_token=0.001)
    pool = servesim.DeviceProfile(**AFFINE, kv_pages=4000)
    assert fastpath.reference_run(U07, "fcfs", {}, azure, context, "full") is None
    assert fastpath.reference_run(U07, "chunked", {"chunk": 4}, azure, pool, "full") is None
    fair = {"budget": 512, "quantum": 256}  # no fast path named in unit.yaml
    assert fastpath.reference_run(U08, "fair", fair, azure, pool, "full") is None
    kv = reference.load_trace(U08, "kv-pages")  # carries unit 08 fields the executor ignores
    assert not fastpath.covers(U08, "budgeted", kv, reference.device_profile(U08))


@pytest.mark.parametrize("field", ["prefillMsPerContextToken", "decodeMsPerContextToken"])
def test_context_costs_run_on_the_lab_engine(tmp_path, capsys, field):
    """The fast path declines a device with a context cost: ``--engine auto`` writes exactly the
    lab engine's run file (which records the cost and passes the replay); ``fast`` refuses."""
    from grader.cli.main import main
    from grader.verify import verify_run

    trace = reference.load_trace(U08, "azure-conv-slice")
    plain = reference.device_profile(U08)
    device = servesim.DeviceProfile.from_json(plain.to_json() | {field: 0.0005})
    assert fastpath.covers(U08, "budgeted", trace, plain)
    assert not fastpath.covers(U08, "budgeted", trace, device)
    profile = tmp_path / "device.json"
    profile.write_text(json.dumps(device.to_json()), encoding="utf-8")
    args = ["simulate", "--unit", "unit08", "--reference", "--trace", "azure-conv-slice"]
    args += ["--policy", "budgeted", "--device-profile", str(profile)]
    files = {}
    for engine in ("auto", "lab"):
        files[engine] = tmp_path / f"{engine}.json"
        assert main([*args, "--engine", engine, "--output", str(files[engine])]) == 0
    assert files["auto"].read_bytes() == files["lab"].read_bytes()
    doc = json.loads(files["auto"].read_text(encoding="utf-8"))
    run = doc["runs"][0]
    assert run["device"][field] == 0.0005
    assert verify_run(run, doc["trace"], device.to_json()) == []
    lab_plain = reference.run_reference(U08, trace, "budgeted", {"budget": 512}, plain)
    assert run["summary"]["allDoneMs"] > lab_plain["summary"]["allDoneMs"]
    capsys.readouterr()
    assert main([*args, "--engine", "fast", "--output", str(tmp_path / "fast.json")]) == 2
    assert "--engine fast does not cover policy budgeted" in capsys.readouterr().err
    assert not (tmp_path / "fast.json").exists()


@pytest.mark.parametrize("field, value", [("hostPages", 64), ("swapMsPerPage", 0.04)])
def test_swap_devices_run_on_the_lab_engine(tmp_path, field, value):
    """A device that can swap (31.6) is the lab engine's: the fast path declines it, and
    ``--engine auto`` writes exactly the lab engine's run file, which passes the replay.
    ``paged`` never swaps, so its schedule is the plain device's (the fast path's) run."""
    from grader.cli.main import main
    from grader.verify import verify_run

    trace = reference.load_trace(U08, "azure-conv-slice")
    plain = replace(reference.device_profile(U08), kv_pages=2048)
    device = servesim.DeviceProfile.from_json(plain.to_json() | {field: value})
    assert fastpath.covers(U08, "paged", trace, plain)
    assert not fastpath.covers(U08, "paged", trace, device)
    assert fastpath.reference_run(U08, "paged", {"budget": 512}, trace, device, "full") is None
    profile = tmp_path / "device.json"
    profile.write_text(json.dumps(device.to_json()), encoding="utf-8")
    args = ["simulate", "--unit", "unit08", "--reference", "--trace", "azure-conv-slice"]
    args += ["--policy", "paged", "--device-profile", str(profile)]
    files = {engine: tmp_path / f"{engine}.json" for engine in ("auto", "lab")}
    for engine, path in files.items():
        assert main([*args, "--engine", engine, "--output", str(path)]) == 0
    assert files["auto"].read_bytes() == files["lab"].read_bytes()
    run = json.loads(files["auto"].read_text(encoding="utf-8"))["runs"][0]
    assert run["device"][field] == value
    assert verify_run(run, trace.raw, device.to_json()) == []
    fast = fastpath.reference_run(U08, "paged", {"budget": 512}, trace, plain, "full", True)
    swaps = {"swapOut", "swapIn"}
    events = [{k: v for k, v in e.items() if k not in swaps} for e in run["events"]]
    assert events == fast["events"] and run["requests"] == fast["requests"]
    assert all(not e.get("swapOut") and not e.get("swapIn") for e in run["events"])


NO_NUMPY = "import sys; sys.modules['numpy'] = None; from grader.cli import main; sys.exit(main())"


@pytest.mark.parametrize("engine, code", [("auto", 0), ("fast", 2)])
def test_core_install_without_numpy(tmp_path, engine, code):
    """The core install has no numpy: auto falls back to the lab engine, fast says what to do."""
    out = tmp_path / "run.json"
    args = ["simulate", "--unit", "unit07", "--reference", "--trace", "mixed", "--policy", "fcfs"]
    done = subprocess.run(
        [sys.executable, "-c", NO_NUMPY, *args, "--engine", engine, "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == code, done.stderr
    if code == 0:
        assert json.loads(out.read_text())["runs"][0]["policy"] == "fcfs"
    else:
        assert done.stderr.strip().endswith("run `bash scripts/setup.sh traces`")
        assert not out.exists()
