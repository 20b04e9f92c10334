"""Traces read into columns (``grader.fastpath.tracecolumns``) and the columns' JSON text.

``read_trace`` must give what ``servesim.trace.read_trace_file`` gives, for every file: the same
requests, the same document (key order and number spelling included, as the run file copies
it), and for a file it does not take as plain, the same trace or the same error. The fast
path's columns and tables must be written as the lists they stand for.
"""

from __future__ import annotations

import json
import tracemalloc
from array import array
from pathlib import Path

import pytest
from servesim.trace import TraceError, read_trace_file

from grader.fastpath import tracecolumns
from grader.fastpath.columns import Table, floats, ints
from grader.jsonio import dumps_run_file, run_file_chunks
from grader.units import load_unit

DATA = Path(__file__).resolve().parent.parent / "data"
LAB_TRACES = sorted(
    path
    for unit in ("unit07", "unit08")
    for path in (load_unit(unit).lab_dir / "traces").glob("*.json")
)
FILES = [DATA / "azure-conv-1000.json", *LAB_TRACES]


@pytest.fixture(params=["whole document", "by request"])
def reader(request, monkeypatch):
    """Both ways ``read_trace`` decodes: a small file whole (orjson, then columns), a large
    one request by request (the standard decoder's hook); each must read every file alike."""
    if request.param == "by request":
        monkeypatch.setattr(tracecolumns, "_WHOLE_CHARS", -1)
    return request.param


def assert_same_trace(path: Path) -> None:
    ours, theirs = tracecolumns.read_trace(path), read_trace_file(path)
    assert (ours.name, ours.description) == (theirs.name, theirs.description)
    assert len(ours.requests) == len(theirs.requests)
    assert tuple(ours.requests) == theirs.requests
    assert ours.requests[-1] == theirs.requests[-1] and ours.requests[1:3] == theirs.requests[1:3]
    for doc in (ours.raw, tracecolumns.listed({"trace": ours.raw})["trace"]):
        text = "".join(run_file_chunks(doc, None))
        assert text == dumps_run_file(theirs.raw, None)
    assert json.dumps(tracecolumns.listed({"trace": ours.raw})["trace"]) == json.dumps(theirs.raw)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_trace_reads_the_same(path, reader):
    assert_same_trace(path)


def test_plain_traces_are_columns_and_others_are_not(reader):
    plain = tracecolumns.read_trace(DATA / "azure-conv-1000.json")
    assert isinstance(plain.requests, tracecolumns.Requests)
    assert isinstance(plain.raw["requests"], tracecolumns.RawRequests)
    tenants = load_unit("unit08").lab_dir / "traces" / "tenants.json"
    assert isinstance(tracecolumns.read_trace(tenants).requests, tuple)


def plain_doc() -> dict:
    return {
        "name": "t",
        "description": "d",
        "requests": [
            {"id": "a", "arrivalMs": 0, "inputTokens": 3, "outputTokens": 2},
            {"id": "b", "arrivalMs": 1.5, "inputTokens": 4, "outputTokens": 1},
            {"id": "c", "arrivalMs": 2.25e-05, "inputTokens": 1, "outputTokens": 7},
        ],
    }


def edited(edit) -> str:
    doc = plain_doc()
    edit(doc)
    return json.dumps(doc)


CASES = {
    "plain": json.dumps(plain_doc()),
    "int arrivals": edited(lambda d: d["requests"][1].update(arrivalMs=2)),
    "huge int arrival": edited(lambda d: d["requests"][2].update(arrivalMs=2**60 + 1)),
    "key order": edited(
        lambda d: d["requests"].__setitem__(0, dict(reversed(d["requests"][0].items())))
    ),
    "top-level order": edited(lambda d: d.update(name=d.pop("name"))),
    "no name": edited(lambda d: d.pop("name")),
    "unit 08 field": edited(lambda d: d["requests"][0].update(tenant="x")),
    "unknown field": edited(lambda d: d["requests"][0].update(inputTokns=3)),
    "unknown top-level field": edited(lambda d: d.update(extra=d["requests"][0])),
    "duplicate id": edited(lambda d: d["requests"][2].update(id="a")),
    "empty id": edited(lambda d: d["requests"][2].update(id="")),
    "bool tokens": edited(lambda d: d["requests"][1].update(outputTokens=True)),
    "zero tokens": edited(lambda d: d["requests"][1].update(inputTokens=0)),
    "float tokens": edited(lambda d: d["requests"][1].update(inputTokens=2.0)),
    "negative arrival": edited(lambda d: d["requests"][1].update(arrivalMs=-1.0)),
    "NaN arrival": edited(lambda d: d["requests"][1].update(arrivalMs=float("nan"))),
    "infinite arrival": edited(lambda d: d["requests"][1].update(arrivalMs=float("inf"))),
    "string arrival": edited(lambda d: d["requests"][1].update(arrivalMs="1")),
    "missing field": edited(lambda d: d["requests"][1].pop("outputTokens")),
    "nested value": edited(lambda d: d["requests"][1].update(tenant={"id": "x"})),
    "null request": edited(lambda d: d["requests"].insert(1, None)),
    "number request": edited(lambda d: d["requests"].append(5)),
    "request elsewhere": edited(lambda d: d.update(description=[d["requests"].pop()])),
    "bad description": edited(lambda d: d.update(description=3)),
    "no requests": edited(lambda d: d.update(requests=[])),
    "requests not a list": edited(lambda d: d.update(requests=d["requests"][0])),
    "duplicate key": json.dumps(plain_doc())[:-1] + ', "requests": []}',
    "top level a request": json.dumps(plain_doc()["requests"][0]),
    "top level a list": json.dumps(plain_doc()["requests"]),
    "duplicate request key": json.dumps(plain_doc())[:-3] + ', "outputTokens": 4}]}',
    "float arrival past 2**53": edited(lambda d: d["requests"][1].update(arrivalMs=2.0**60)),
    "arrivals past the largest sum": edited(
        lambda d: [r.update(arrivalMs=1e308) for r in d["requests"]]
    ),
    "deep nesting": json.dumps(plain_doc())[:-1] + ', "extra": ' + "[" * 600 + "]" * 600 + "}",
    "not JSON": '{"name": "t", "requests": [',
    "empty file": "",
}


@pytest.mark.parametrize("text", CASES.values(), ids=CASES.keys())
def test_any_file_reads_as_read_trace_file_reads_it(tmp_path, text, reader):
    path = tmp_path / "trace.json"
    path.write_text(text, encoding="utf-8")
    try:
        theirs = read_trace_file(path)
    except TraceError as exc:
        with pytest.raises(TraceError) as ours:
            tracecolumns.read_trace(path)
        assert str(ours.value) == str(exc)
    else:
        assert theirs.requests
        assert_same_trace(path)


def test_unreadable_files_fail_as_read_trace_file_fails(tmp_path, reader):
    latin = tmp_path / "latin.json"
    latin.write_bytes(json.dumps(plain_doc()).replace('"d"', '"\xe9"').encode("latin-1"))
    for path in (tmp_path / "missing.json", tmp_path, latin):
        with pytest.raises(TraceError) as exc:
            read_trace_file(path)
        with pytest.raises(TraceError) as ours:
            tracecolumns.read_trace(path)
        assert str(ours.value) == str(exc.value)
    assert "not UTF-8 text (byte" in str(
        ours.value
    )  # the last one read: a named error, not a traceback


@pytest.mark.parametrize("count", [0, 1, 4095, 4096, 4097, 9000])
def test_columns_are_written_as_their_lists(count):
    values = [k * 0.1 + 1e-05 * (k % 3) for k in range(count)]
    rows = [[k, k * 7, -k, 2**40 + k] for k in range(count)]
    table = Table(4)
    for row in rows:
        table.add(*row)
    doc = {"f": floats(values), "i": ints(range(count)), "t": table, "tail": [1.5]}
    plain = {"f": values, "i": list(range(count)), "t": rows, "tail": [1.5]}
    assert "".join(run_file_chunks(doc, None)) == dumps_run_file(plain, None)
    assert isinstance(doc["f"], array) and table.tolist() == rows and len(table) == count
    assert [list(r) for r in table] == rows and [list(table[k]) for k in range(count)] == rows
    assert table[1:3].tolist() == rows[1:3]


def test_columns_hold_far_less_than_a_dict_and_a_tuple_per_request(tmp_path, reader):
    """What a read trace keeps: columns, not the decoded dicts and ``Request`` tuples."""
    path = tmp_path / "trace.json"
    requests = [
        {"id": f"r{k}", "arrivalMs": k * 1.25, "inputTokens": 300 + k, "outputTokens": 500 + k}
        for k in range(5_000)
    ]
    path.write_text(json.dumps({"name": "big", "requests": requests}), encoding="utf-8")
    kept = {}
    for name, read in (("columns", tracecolumns.read_trace), ("dicts", read_trace_file)):
        tracemalloc.start()
        trace = read(path)
        kept[name] = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert len(trace.requests) == len(requests)
        del trace
    assert kept["columns"] < 0.3 * kept["dicts"], kept
