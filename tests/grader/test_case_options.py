"""Case options beyond unit 07's (device overrides, queue cap, kinds) and the optional request
fields of trace specs (maxOutputTokens, deadlineMs, tenants): parsed generically, one clear
error for a bad value."""

from __future__ import annotations

import pytest

from grader.cases import Kind, _parse_case
from grader.course.golden import case_device
from grader.traces.tracegen import SpecError, trace_from_spec
from grader.units import UnitError, load_unit

POLICIES = {"paged": {"name": "paged", "params": {"budget": {"default": 512, "min": 1}}}}
BASE = {"id": "c", "trace": "t", "policy": "paged", "points": 1, "visibility": "hidden"}


def parse(**extra):
    return _parse_case({**BASE, **extra}, "unit.yaml: grading.cases #1", POLICIES)


def test_device_and_queue_cap_become_simulate_flags():
    case = parse(device={"maxActive": 4, "kvPages": 96}, queueCap=5, overheadMs=0.5)
    argv = case.argv()
    assert argv[argv.index("--max-active") + 1] == "4"
    assert argv[argv.index("--kv-pages") + 1] == "96"
    assert argv[argv.index("--queue-cap") + 1] == "5"
    assert argv[argv.index("--overhead-ms") + 1] == "0.5"
    assert case.kind is Kind.EXACT


def test_case_device_applies_the_overrides_to_the_units_device():
    unit = load_unit("unit08")
    device = case_device(unit, parse(device={"maxActive": 4, "kvPages": 96}, overheadMs=0))
    assert (device.max_active, device.kv_pages, device.overhead_ms) == (4, 96, 0)
    assert device.prefill_ms_per_token == unit.device["prefillMsPerToken"]


def test_stream_and_step_cost_overrides_run_on_the_device_the_golden_uses():
    """A case's streaming and step-cost fields become simulate.py flags; the lab's flags give
    the same device as ``case_device`` (the reference's golden run)."""
    import argparse

    from servesim import DeviceProfile, runflags

    unit = load_unit("unit09")
    fields = {
        "prefillMsPerToken": 0.05,
        "decodeBatchMs": 10.0,
        "decodeMsPerSeq": 0.2,
        "streamBufferBytes": 2048,
        "streamEventBytes": 64,
        "streamLowMarkBytes": 1024,
        "streamPauseDeadlineMs": 5000,
    }
    case = parse(device={"kvPages": 64, **fields})
    parser = argparse.ArgumentParser()
    runflags.add_flags(parser)
    args, _ = parser.parse_known_args(case.argv())
    lab_device = DeviceProfile.from_json(unit.device, source="unit.yaml")
    got = runflags._device_flags(args, lab_device)
    assert got == case_device(unit, case)
    assert (got.stream_buffer_bytes, got.decode_batch_ms, got.kv_pages) == (2048, 10.0, 64)


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"device": {"pageTokens": 8}}, "device"),
        ({"device": {"maxActive": 0}}, "maxActive must be an integer >= 1"),
        ({"queueCap": 0}, "queueCap must be an integer >= 1"),
        ({"kind": "fuzzy"}, "kind must be"),
        ({"kind": "script"}, "needs 'script'"),
        ({"kind": "script", "script": "../x.py"}, "script must be"),
        ({"kind": "goodput"}, "needs 'slo'"),
        ({"kind": "goodput", "slo": {"ttftMs": -1}}, "slo.ttftMs must be a number > 0"),
    ],
)
def test_bad_case_options_give_one_clear_error(extra, message):
    with pytest.raises(UnitError, match=r"grading\.cases #1") as err:
        parse(**extra)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_script_and_goodput_cases_keep_what_they_are_asked():
    script = parse(kind="script", script="measure_check.py", args={"function": "tpot_means"})
    assert (script.kind, script.script, script.args) == (
        Kind.SCRIPT,
        "measure_check.py",
        {"function": "tpot_means"},
    )
    goodput = parse(kind="goodput", slo={"ttftMs": 500, "tpotMs": 30})
    assert goodput.kind is Kind.GOODPUT and goodput.slo == {"ttftMs": 500, "tpotMs": 30}
    # the same simulation, judged another way, is another case for the metamorphic note
    assert script.setup_key == parse().setup_key


GEN = {
    "seed": 3,
    "count": 200,
    "arrivals": {"process": "poisson", "ratePerMs": 0.1},
    "inputTokens": {"dist": "uniform", "min": 1, "max": 50},
    "outputTokens": {"dist": "uniform", "min": 1, "max": 40},
}


def spec(**extra):
    return {"name": "x", "generate": {**GEN, **extra}}


def test_optional_request_fields_are_drawn_after_the_others():
    plain = trace_from_spec(spec())["requests"]
    rich = trace_from_spec(
        spec(
            maxOutputTokens={"dist": "constant", "value": 30},
            deadlineMs={"dist": "choice", "values": [100, 500]},
            deadlineShare=0.5,
            tenants={"values": ["a", "b"], "weights": [3, 1]},
        )
    )["requests"]
    core = ("id", "arrivalMs", "inputTokens", "outputTokens")
    assert [{k: r[k] for k in core} for r in rich] == plain  # older specs keep their traces
    for r in rich:
        assert r.get("maxOutputTokens", r["outputTokens"]) >= r["outputTokens"]
        assert ("maxOutputTokens" in r) == (r["outputTokens"] < 30)
        assert r.get("deadlineMs", 100.0) in (100.0, 500.0)
    with_deadline = sum("deadlineMs" in r for r in rich)
    assert 60 < with_deadline < 140  # about half of 200
    tenants = [r["tenant"] for r in rich]
    assert set(tenants) == {"a", "b"} and tenants.count("a") > tenants.count("b")


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"deadlineShare": 2}, "'deadlineShare' must be a number in [0, 1]"),
        ({"tenants": {"values": []}}, "'tenants.values' must be a non-empty list of names"),
        ({"tenants": {"values": ["a"], "weights": [1, 2]}}, "'weights' must be as many"),
        ({"maxOutputTokens": {"dist": "constant", "value": 0}}, "'value' must be an integer"),
    ],
)
def test_bad_optional_fields_give_one_clear_error(extra, message):
    with pytest.raises(SpecError) as err:
        trace_from_spec(spec(**extra), "spec.yaml")
    assert message in str(err.value)
