"""The streamed full-format run file (``grader.fastpath.fullwrite``) against ``runfile.dumps``.

Every check compares text: ``"".join(chunks(doc))`` must be byte for byte what
``runfile.dumps(expand_document(doc), indent=2)`` writes, for unit 07 and unit 08 runs (status
columns, rejections, preemptions, tenants and deadlines, idle waits), random runs, runs that swap
(resumes), a document mixing a full and a compact run, and any JSON value. The command line's
full files from the fast path and the lab engine are compared byte for byte, and the writer's
memory is held well below the size of what it writes.
"""

from __future__ import annotations

import json
import math
import sys
import tracemalloc

import pytest
import servesim
from hypothesis import given, settings
from hypothesis import strategies as st
from randomruns import PRESSURE, pressure_device, request_rows, unit08_run
from servesim import cli
from servesim.compact import compact_run, expand_document
from servesim.runfile import build_document, build_run, dumps
from servesim.swapping import swap_long

from grader import reference
from grader.fastpath import fullwrite
from grader.units import load_unit

U07, U08 = load_unit("unit07"), load_unit("unit08")


def streamed(doc: dict) -> str:
    return "".join(fullwrite.chunks(doc))


def assert_streams(doc: dict) -> None:
    assert streamed(doc) == dumps(expand_document(doc), indent=2)


def simulate(unit, tmp_path, *argv) -> dict:
    out = tmp_path / "compact.json"
    code = cli.main(
        [*argv, "--format", "compact", "--output", str(out)],
        policies_module=reference.solution_policies(unit),
        lab_dir=unit.lab_dir,
    )
    assert code == 0
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "unit, argv",
    [
        (U07, ["--trace", "mixed", "--policy", "both", "--chunk", "2"]),
        (U07, ["--trace", "unseen", "--policy", "both"]),
        (U08, ["--trace", "burst", "--policy", "all"]),
        (U08, ["--trace", "tenants", "--policy", "all"]),
        (U08, ["--trace", "kv-pages", "--policy", "all", "--device-profile", "kv-64-pages"]),
    ],
    ids=["u07-mixed", "u07-unseen", "u08-burst", "u08-tenants", "u08-kv64"],
)
def test_lab_runs(tmp_path, unit, argv):
    if "--device-profile" in argv:
        at = argv.index("--device-profile") + 1
        argv = [*argv[:at], str(unit.lab_dir / "devices" / f"{argv[at]}.json"), *argv[at + 1 :]]
    doc = simulate(unit, tmp_path, *argv)
    assert any("format" in run for run in doc["runs"])
    assert_streams(doc)


def test_rejected_requests_are_written(tmp_path):
    """On the 64-page device every policy rejects a request (a record without metrics)."""
    argv = ["--trace", "kv-pages", "--policy", "all"]
    argv += ["--device-profile", str(U08.lab_dir / "devices" / "kv-64-pages.json")]
    doc = simulate(U08, tmp_path, *argv)
    assert all("rejected" in run["requests"]["status"] for run in doc["runs"])
    assert_streams(doc)


REQUEST = request_rows(400)


@settings(max_examples=60, deadline=None)
@given(
    requests=st.lists(REQUEST, min_size=1, max_size=10),
    policy=st.sampled_from(["paged", "budgeted", "fair", "continuous"]),
    budget=st.integers(4, 64),
    pool=st.integers(0, 3),
    cap=st.sampled_from([None, 2, 4]),
)
def test_random_runs(requests, policy, budget, pool, cap):
    rows = [{"id": f"R{i}", **r} for i, r in enumerate(requests)]
    run, timeline = unit08_run(rows, policy, budget, pool, cap)
    if run is None:
        return
    compact = compact_run(run, timeline)
    if compact is not None:
        trace = servesim.parse_trace({"name": "random", "requests": rows})
        assert_streams(build_document(trace, [compact]))


@pytest.mark.parametrize("host_pages", [64, 10])
def test_runs_that_swap(host_pages):
    """Swapped requests re-enter by resumes (their token times merge two kinds of rows)."""
    trace = servesim.parse_trace({"name": "pressure", "requests": PRESSURE})
    device = pressure_device(host_pages)
    paged = reference.solution_policies(U08).paged
    timeline = servesim.simulate(trace, swap_long(lambda v: paged(v, 512), 0), device, budget=512)
    run = build_run("paged", {"budget": 512}, device, timeline, None, extended=True)
    compact = compact_run(run, timeline)
    assert compact["resumes"] or host_pages == 10
    assert_streams(build_document(trace, [compact, run]))  # a full entry beside it


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_any_json_value(value):
    assert fullwrite.encode(value) == json.dumps(value, indent=2, ensure_ascii=False)


def test_non_finite_times_are_refused_as_json_refuses_them(tmp_path):
    doc = simulate(U07, tmp_path, "--trace", "mixed", "--policy", "fcfs")
    with pytest.raises(ValueError):
        dumps({**doc, "bad": math.inf})
    with pytest.raises(ValueError):
        streamed({**doc, "bad": math.inf})
    doc["runs"][0]["stepEndMs"][1] = math.nan
    with pytest.raises(ValueError, match="not JSON compliant"):
        streamed(doc)


def test_memory_stays_below_the_text(tmp_path):
    """Streaming holds one record at a time: the peak is a small part of the text written."""
    azure = reference.load_trace(U08, "azure-conv-slice")
    doc = simulate(U08, tmp_path, "--trace", "azure-conv-slice", "--policy", "budgeted")
    size = 0
    tracemalloc.start()
    try:
        for piece in fullwrite.chunks(doc):
            size += len(piece)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(azure.requests) > 100 and size > 1_000_000
    assert peak < size / 4, f"peak {peak:,} bytes while writing {size:,} characters"


@pytest.mark.parametrize("policy", ["paged", "budgeted"])
def test_command_line_full_files_are_identical(tmp_path, policy):
    """``infralab simulate --format full``: the same bytes from the fast path and the lab."""
    from grader.cli.main import main

    trace = reference.load_trace(U08, "azure-conv-slice")
    base = reference.device_profile(U08)
    pages = max(base.pages_for(r.input_tokens + r.output_tokens) for r in trace.requests)
    profile = tmp_path / "device.json"
    profile.write_text(json.dumps(base.to_json() | {"kvPages": pages}), encoding="utf-8")
    args = ["simulate", "--unit", "unit08", "--reference", "--trace", "azure-conv-slice"]
    args += ["--policy", policy, "--budget", "512", "--device-profile", str(profile)]
    files = {}
    for engine in ("fast", "lab"):
        files[engine] = tmp_path / f"{engine}.json"
        argv = [*args, "--engine", engine, "--format", "full", "--output", str(files[engine])]
        assert main(argv) == 0
    assert files["fast"].read_bytes() == files["lab"].read_bytes()
    run = json.loads(files["lab"].read_text(encoding="utf-8"))["runs"][0]
    assert "format" not in run and run["events"]
    assert run["summary"]["recomputes"] > 0 or policy == "budgeted"  # paged preempts here


@pytest.mark.parametrize("orjson", [True, False], ids=["orjson", "json"])
def test_compact_files_in_pieces(tmp_path, monkeypatch, orjson):
    """Unindented run files come a block of list members at a time: the pieces join to the
    one-call text, with orjson and with the standard library."""
    from grader import jsonio

    if not orjson:
        monkeypatch.setitem(sys.modules, "orjson", None)  # its import fails
    monkeypatch.setattr(jsonio, "_BLOCK_ITEMS", 7)
    doc = simulate(U08, tmp_path, "--trace", "azure-conv-slice", "--policy", "paged")
    pieces = list(jsonio.run_file_chunks(doc, None))
    assert max(map(len, pieces)) < len("".join(pieces)) / 10  # no piece holds a table
    assert "".join(pieces) == jsonio.dumps_run_file(doc, None)
    assert "".join(pieces) == dumps(doc, None)  # the standard library's spelling
    assert "".join(jsonio.run_file_chunks(doc, 2)) == dumps(doc, 2)


def test_integer_times_are_spelled_as_json_spells_them(tmp_path):
    """A compact file written by hand may hold whole-number times as integers: the gaps and
    figures made of them stay integers in the text, as ``json`` writes them."""
    doc = simulate(U07, tmp_path, "--trace", "mixed", "--policy", "both", "--chunk", "2")
    for run in doc["runs"]:
        run["stepEndMs"] = [math.ceil(end) for end in run["stepEndMs"]]
    assert_streams(doc)


finite = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(finite | st.sampled_from([0.0, -0.0, 1e-4, 9.9e-5, 1e16]), max_size=40),
    recurring=st.booleans(),
)
def test_number_texts_are_json_spellings(values, recurring):
    """``texts`` (by orjson where it agrees, else ``repr``) spells floats as ``json`` does,
    tiny ones, huge ones and negative zeros included, and with the standard library alone."""
    from grader.fastpath import jsonlayout

    expected = [json.dumps(v) for v in values]
    assert jsonlayout.texts(values, recurring) == expected
    assert jsonlayout.texts([*values, *values], True) == expected * 2
    assert jsonlayout._orjson() is not None  # the traces extra installs it
    try:
        jsonlayout._orjson.cache_clear()
        sys.modules["orjson"], saved = None, sys.modules.get("orjson")  # its import fails
        assert jsonlayout._orjson() is None
        assert jsonlayout.texts(values, recurring) == expected
    finally:
        sys.modules["orjson"] = saved
        jsonlayout._orjson.cache_clear()
