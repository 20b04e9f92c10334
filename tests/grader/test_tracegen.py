"""Trace specs, the seeded generator, the Azure import and `infralab trace new|import|check`."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
import servesim
import yaml

from grader.cli import main
from grader.traces import tracegen, tracetools
from grader.traces.tracegen import SpecError, trace_from_spec

GEN = {
    "name": "g",
    "description": "d",
    "generate": {
        "seed": 1,
        "count": 40,
        "arrivals": {"process": "poisson", "ratePerMs": 0.5},
        "inputTokens": {"dist": "uniform", "min": 2, "max": 5},
        "outputTokens": {"dist": "choice", "values": [1, 7], "weights": [1, 3]},
    },
}


def _with(**changes):
    spec = json.loads(json.dumps(GEN))
    spec["generate"].update(changes)
    return spec


def test_generator_is_seeded_and_valid(unit):
    a, b = trace_from_spec(GEN), trace_from_spec(GEN)
    assert a == b
    assert trace_from_spec(_with(seed=2)) != a
    trace = tracetools.validate_doc(unit, a, "g")
    assert len(trace.requests) == 40
    assert [r.id for r in trace.requests[:3]] == ["r1", "r2", "r3"]
    arrivals = [r.arrival_ms for r in trace.requests]
    assert arrivals == sorted(arrivals) and arrivals[0] == 0
    assert all(a * 4 == int(a * 4) for a in arrivals)  # on the 0.25 ms grid
    assert {r.input_tokens for r in trace.requests} <= {2, 3, 4, 5}
    assert {r.output_tokens for r in trace.requests} <= {1, 7}


def test_arrival_processes():
    fixed = trace_from_spec(_with(arrivals={"process": "fixed", "intervalMs": 2.5}, startMs=4))
    assert [r["arrivalMs"] for r in fixed["requests"][:3]] == [4.0, 6.5, 9.0]

    def gap_cv(arrivals):
        spec = _with(arrivals=arrivals, count=3000, roundMs=0)
        times = np.array([r["arrivalMs"] for r in trace_from_spec(spec)["requests"]])
        gaps = np.diff(times)
        return gaps.std() / gaps.mean(), gaps.mean()

    cv, mean = gap_cv({"process": "poisson", "ratePerMs": 0.5})
    assert 0.9 < cv < 1.1 and 1.8 < mean < 2.2
    cv, mean = gap_cv({"process": "gamma", "ratePerMs": 0.5, "cv": 3})
    assert cv > 2.0 and 1.4 < mean < 2.6  # bursty: same rate, far more variable gaps


def test_length_distributions():
    spec = _with(
        inputTokens={"dist": "lognormal", "median": 6, "sigma": 1.0, "min": 2, "max": 9},
        outputTokens={"dist": "constant", "value": 3},
        count=500,
    )
    requests = trace_from_spec(spec)["requests"]
    inputs = {r["inputTokens"] for r in requests}
    assert min(inputs) == 2 and max(inputs) == 9
    assert {r["outputTokens"] for r in requests} == {3}


def test_read_rates_are_drawn_after_the_other_fields():
    """``readBytesPerS`` gives every request a client read rate (streaming devices); the fields
    drawn before it are those of the same spec without it."""
    rates = {"dist": "choice", "values": [150, 1200, 1000000], "weights": [1, 3, 4]}
    plain = trace_from_spec(_with(count=200))["requests"]
    streamed = trace_from_spec(_with(count=200, readBytesPerS=rates))["requests"]
    assert [{k: v for k, v in r.items() if k != "readBytesPerS"} for r in streamed] == plain
    assert {r["readBytesPerS"] for r in streamed} == {150, 1200, 1000000}
    assert all(type(r["readBytesPerS"]) is int for r in streamed)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ([1, 2], "a spec must be a mapping"),
        ({"name": "x"}, "exactly one of 'requests', 'generate', 'import'"),
        ({"name": "x", "requests": [], "generate": {}}, "exactly one of"),
        ({"requests": []}, "'name' must be a non-empty string"),
        ({"name": "x", "requests": [], "colour": 1}, "unknown field 'colour'"),
        (
            {"name": "x", "requests": [], "descripton": ""},
            "unknown field 'descripton' (did you mean 'description'?)",
        ),
        (_with(count=0), "'count' must be an integer >= 1"),
        (_with(arrivals={"process": "weibull"}), "unknown process 'weibull'"),
        (
            _with(arrivals={"process": "poisson", "ratePerMs": 0}),
            "'ratePerMs' must be a number > 0",
        ),
        (_with(inputTokens={"dist": "uniform", "min": 5, "max": 2}), "'max' must be >= 'min'"),
        (_with(outputTokens={"dist": "choice", "values": [0]}), "integers >= 1"),
        (_with(seed="x"), "'seed' must be an integer >= 0"),
        ({"name": "x", "import": {"azure": "nope.csv", "duration": 1}}, "not found"),
    ],
)
def test_broken_specs_give_one_clear_error(spec, message):
    with pytest.raises(SpecError) as info:
        trace_from_spec(spec, "spec.yaml")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


CSV = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:51.2224670,879,55
2023-11-16 18:15:51.3910170,91,1
2023-11-16 18:15:55.0000000,1000,10
"""


@pytest.fixture
def azure_csv(tmp_path):
    path = tmp_path / "data" / "AzureLLMInferenceTrace_conv.csv"
    path.parent.mkdir()
    path.write_text(CSV, encoding="utf-8")
    return path


def test_azure_import_window_scale_and_attribution(azure_csv):
    doc = tracegen.import_azure(azure_csv, start=4, duration=1, scale=10, name="w")
    assert [r["inputTokens"] for r in doc["requests"]] == [40, 88, 10]
    assert [r["outputTokens"] for r in doc["requests"]] == [11, 6, 1]
    # times in ms from the window start (4 s after the first row), divided by the scale
    first = (50.995169 - 46.68059 - 4) * 1000 / 10
    assert doc["requests"][0]["arrivalMs"] == pytest.approx(first, abs=1e-3)
    assert "CC-BY 4.0" in doc["description"] and "Splitwise" in doc["description"]
    with pytest.raises(SpecError, match="no request in the window"):
        tracegen.import_azure(azure_csv, start=100, duration=1, scale=10)


def test_import_command_writes_trace_and_spec_that_remakes_it(unit, azure_csv, tmp_path, capsys):
    out, spec = tmp_path / "out" / "w.json", tmp_path / "out" / "w.yaml"
    argv = ["trace", "import", "--unit", "unit07", "--azure", str(azure_csv), "--start", "4"]
    argv += ["--duration", "1", "--scale", "10", "--name", "w", "--output", str(out)]
    assert main([*argv, "--spec-out", str(spec)]) == 0
    assert "(3 requests)" in capsys.readouterr().out
    remade = tmp_path / "remade.json"
    assert (
        main(
            [
                "trace",
                "new",
                "--unit",
                "unit07",
                "--spec",
                str(spec),
                "--output",
                str(remade),
                "--data",
                str(azure_csv.parent),
            ]
        )
        == 0
    )
    assert remade.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")
    assert yaml.safe_load(spec.read_text(encoding="utf-8"))["import"]["scale"] == 10


def test_new_command_writes_a_valid_trace(tmp_path, capsys):
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(GEN), encoding="utf-8")
    out = tmp_path / "t.json"
    assert (
        main(["trace", "new", "--unit", "unit07", "--spec", str(spec), "--output", str(out)]) == 0
    )
    assert json.loads(out.read_text(encoding="utf-8")) == trace_from_spec(GEN)
    assert main(["trace", "check", str(out)]) == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x\ngenerate: {seed: 1}\n", "field 'count' is missing"),
        ("name: [unclosed\n", "not valid YAML"),
        (
            "name: x\nrequests:\n  - {id: a, arrivalMs: -1, inputTokens: 1, outputTokens: 1}\n",
            "field 'arrivalMs' must be a finite number >= 0",
        ),
    ],
)
def test_new_command_bad_spec_writes_nothing(tmp_path, capsys, text, message):
    spec = tmp_path / "bad.yaml"
    spec.write_text(text, encoding="utf-8")
    out = tmp_path / "t.json"
    assert (
        main(["trace", "new", "--unit", "unit07", "--spec", str(spec), "--output", str(out)]) == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.startswith("infralab: error: ") and message in err and "\n" not in err
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [spec]


def test_check_uses_the_labs_errors(unit, tmp_path, capsys):
    servesim = __import__("servesim")
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"requests": [{"id": "a", "arrivalMs": 0, "inputTokens": 0, "outputTokens": 1}]}'
    )
    with pytest.raises(servesim.TraceError) as info:
        servesim.read_trace_file(bad)
    good_yaml = tmp_path / "ok.yaml"
    good_yaml.write_text("requests:\n  - {id: a, arrivalMs: 0, inputTokens: 2, outputTokens: 1}\n")
    assert main(["trace", "check", str(bad), str(good_yaml)]) == 1
    out = capsys.readouterr().out
    assert f"error: {bad}: {info.value}" in out
    assert f"ok: {good_yaml}: 1 requests" in out


def test_check_unit_traces_and_specs(unit):
    lines = tracetools.check_unit_traces(unit)
    assert all(line.ok for line in lines), [line.message for line in lines if not line.ok]
    specs = [line for line in lines if line.path.suffix == ".yaml"]
    assert len(specs) >= 6
    hidden = sorted((unit.traces_dir / "hidden").glob("*.json"))
    assert len(hidden) >= 6
    azure = json.loads((unit.traces_dir / "hidden" / "azure-conv.json").read_text())
    assert "CC-BY 4.0" in azure["description"]


def test_check_flags_a_hidden_trace_that_drifted_from_its_spec(scratch_unit):
    path = scratch_unit.traces_dir / "hidden" / "ties.json"
    path.write_text(path.read_text().replace('"alpha"', '"alfa"'))
    lines = {line.path.name: line for line in tracetools.check_unit_traces(scratch_unit)}
    assert not lines["ties.yaml"].ok
    assert "differs from what the spec makes" in lines["ties.yaml"].message


# -- unit 09's fields: cancels and shared prefixes -----------------------------------------------

U09 = {
    "name": "u09-gen",
    "description": "cancels and shared prefixes",
    "generate": {
        "seed": 5,
        "count": 60,
        "idPrefix": "g",
        "arrivals": {"process": "poisson", "ratePerMs": 0.05},
        "inputTokens": {"dist": "uniform", "min": 40, "max": 200},
        "outputTokens": {"dist": "uniform", "min": 10, "max": 60},
        "cancelMs": {"dist": "choice", "values": [20, 150, 800]},
        "cancelShare": 0.4,
        "prefixes": {
            "share": 0.75,
            "groups": [
                {"weight": 3, "segments": [{"id": "sys0", "tokens": 64}]},
                {"segments": [{"id": "sys0", "tokens": 64}, {"id": "doc1", "tokens": 100}]},
            ],
        },
    },
}


def test_cancels_and_prefixes_are_seeded_drawn_last_and_valid():
    """The same spec gives the same trace; the fields drawn before them are unchanged (older
    specs keep their traces); shares and groups come out as asked, prefixes cut at the
    prompt; the lab's own parser accepts the trace."""
    from grader.units import load_unit

    a, b = trace_from_spec(U09), trace_from_spec(U09)
    assert a == b
    plain = dict(U09, generate={k: v for k, v in U09["generate"].items() if k in GEN["generate"]
                                or k == "idPrefix"})  # fmt: skip
    own = ("cancelMs", "prefix")
    assert [{k: v for k, v in r.items() if k not in own} for r in a["requests"]] == (
        trace_from_spec(plain)["requests"]
    )
    cancels = [r["cancelMs"] for r in a["requests"] if "cancelMs" in r]
    assert set(cancels) == {20.0, 150.0, 800.0} and 10 < len(cancels) < 40
    prefixes = [r["prefix"] for r in a["requests"] if "prefix" in r]
    assert 30 < len(prefixes) < 60
    assert {tuple(s["id"] for s in p) for p in prefixes} == {("sys0",), ("sys0", "doc1")}
    for request in (r for r in a["requests"] if "prefix" in r):
        covered = sum(s["tokens"] for s in request["prefix"])
        assert covered <= request["inputTokens"]
        full = [s["tokens"] for s in request["prefix"]] in ([64], [64, 100])
        assert full or covered == request["inputTokens"]  # cut exactly where the prompt ends
    schema = json.loads((load_unit("unit09").lab_dir / "schemas" / "trace.schema.json").read_text())
    jsonschema.validate(a, schema)  # the published trace schema, as well as the lab's parser
    trace = tracetools.validate_doc(load_unit("unit09"), a, "u09-gen")
    assert sum(r.cancel_ms is not None for r in trace.requests) == len(cancels)
    assert trace_from_spec(_with(seed=6, **{k: U09["generate"][k] for k in ("cancelMs",)})) != a


def test_generated_cancels_and_prefixes_drive_the_engine():
    """unit 09's reference on the generated trace: some requests are cancelled, and only ones
    the generator gave a ``cancelMs``; prefill chunks claim prefix hits in whole pages."""
    from grader import reference
    from grader.cases import load_grading
    from grader.course.golden import case_device
    from grader.units import load_unit

    unit = load_unit("unit09")
    trace = servesim.parse_trace(trace_from_spec(U09), source="u09-gen")
    device = case_device(unit, load_grading(unit).cases[0])
    run = reference.run_reference(unit, trace, "prefix_paged", {"budget": 128}, device)
    status = {r["id"]: r["status"] for r in run["requests"]}
    assert {"cancelled", "completed"} <= set(status.values())
    drawn = {r["id"] for r in trace_from_spec(U09)["requests"] if "cancelMs" in r}
    assert {rid for rid, s in status.items() if s == "cancelled"} <= drawn
    hits = [c for e in run["events"] for c in e["prefill"] if c.get("cached")]
    assert hits and all(c["cached"] % device.page_tokens == 0 for c in hits)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"cancelShare": 0.5}, "'cancelShare' needs 'cancelMs'"),
        ({"cancelMs": {"dist": "constant", "value": 10}, "cancelShare": 2}, "'cancelShare' must"),
        ({"prefixes": {"share": 0.5}}, "'prefixes' must be a mapping with 'groups'"),
        ({"prefixes": {"groups": []}}, "'prefixes.groups' must be a non-empty list"),
        ({"prefixes": {"groups": [{"segments": [{"id": "s"}]}]}}, "segments must each have 'id'"),
        (
            {"prefixes": {"groups": [{"weight": 0, "segments": [{"id": "s", "tokens": 4}]}]}},
            "weights must not all be 0",
        ),
    ],
)
def test_broken_cancel_or_prefix_fields_give_one_clear_error(changes, message):
    with pytest.raises(SpecError) as info:
        trace_from_spec(_with(**changes), "spec.yaml")
    assert message in str(info.value) and "\n" not in str(info.value)
