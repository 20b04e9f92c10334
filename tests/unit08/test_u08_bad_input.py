"""Bad unit 08 input: one error line naming the field, exit 2, nothing written."""

import json

import pytest
from u08tools import copy_lab08, lab_python

GOOD = {"id": "A", "arrivalMs": 0, "inputTokens": 2, "outputTokens": 3}
TIER = json.loads(
    '{"name": "t", "policy": "paged", "budget": 64, "pricePerHour": 1, "qualityPassRate": 0.9,'
    ' "device": {"prefillMsPerToken": 0.1, "decodeBatchMs": 20, "decodeMsPerSeq": 0.05,'
    ' "overheadMs": 0.25, "maxActive": 8, "kvPages": 256, "pageTokens": 16}}'
)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return copy_lab08(tmp_path_factory.mktemp("u08") / "lab", solution=True)


def second(**fields):
    return {
        "name": "bad",
        "requests": [
            GOOD,
            {"id": "B", "arrivalMs": 1, "inputTokens": 1, "outputTokens": 2, **fields},
        ],
    }


TRACES = {
    "max output below output": (second(maxOutputTokens=1), ["'B'", "maxOutputTokens"]),
    "fractional max output": (second(maxOutputTokens=2.5), ["'B'", "maxOutputTokens"]),
    "zero deadline": (second(deadlineMs=0), ["'B'", "deadlineMs"]),
    "string deadline": (second(deadlineMs="soon"), ["'B'", "deadlineMs"]),
    "empty tenant": (second(tenant=""), ["'B'", "tenant"]),
    "numeric tenant": (second(tenant=3), ["'B'", "tenant"]),
}


def tier_with(**changes):
    doc = {k: v for k, v in {**TIER, **changes}.items() if v is not ...}
    return doc


TIERS = {
    "missing price": (tier_with(pricePerHour=...), ["pricePerHour", "missing"]),
    "negative price": (tier_with(pricePerHour=-1), ["pricePerHour"]),
    "pass rate above 1": (tier_with(qualityPassRate=1.5), ["qualityPassRate"]),
    "unknown policy": (tier_with(policy="magic"), ["policy"]),
    "unknown field": (tier_with(colour="red"), ["colour"]),
    "budget below K": (tier_with(budget=4), ["budget", "maxActive"]),
    "bad device": (tier_with(device={"kvPages": 0}), ["kvPages"]),
    "not json": ("{", ["not valid JSON"]),
}


def check_refused(lab, tmp_path, args, words):
    out = tmp_path / "fresh" / "run.json"
    done = lab_python(lab, "simulate.py", *args, "--output", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert not out.exists() and not out.parent.exists()


@pytest.mark.parametrize("case", sorted(TRACES))
def test_bad_trace_field(lab, tmp_path, case):
    doc, words = TRACES[case]
    trace = tmp_path / "bad.json"
    trace.write_text(json.dumps(doc))
    check_refused(lab, tmp_path, ["--trace", str(trace)], words)


@pytest.mark.parametrize("case", sorted(TIERS))
def test_bad_tier_file(lab, tmp_path, case):
    doc, words = TIERS[case]
    tier = tmp_path / "tier.json"
    tier.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    check_refused(lab, tmp_path, ["--trace", "burst", "--tier", str(tier)], words)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--policy", "budgeted", "--budget", "64"], ["--budget", "below maxActive (128)"]),
        (["--load", "open:0"], ["--load", "RATE"]),
        (["--load", "closed:2"], ["--load", "closed:USERS:THINK_MS"]),
        (["--load", "closed:0:100", "--policy", "paged"], ["USERS"]),
        (["--load", "closed:4:100"], ["choose one --policy"]),
        (["--requests", "5"], ["--requests needs --load"]),
    ],
)
def test_bad_limits_and_loads(lab, tmp_path, args, words):
    check_refused(lab, tmp_path, ["--trace", "burst", *args], words)


def test_bad_sweep_tier_is_refused(lab, tmp_path):
    tier = tmp_path / "tier.json"
    tier.write_text(json.dumps(tier_with(budget=2)))
    out = tmp_path / "plots"
    done = lab_python(
        lab, "sweep.py", "--protocol", "protocols/lesson.json", "--tiers", str(tier),
        "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 2 and "budget" in done.stderr and not out.exists()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"seeds": [1]}, ["field 'seeds'", "at least 2"]),
        ({"seeds": [3, 3]}, ["field 'seeds'", "repeat"]),
        ({"cooldownRequests": 0}, ["field 'cooldownRequests'", ">= 1"]),
        ({"warmupRequests": 1900, "cooldownRequests": 100}, ["field 'requestsPerRun'"]),
        ({"confidence": 1}, ["field 'confidence'"]),
        ({"colour": "red"}, ["unknown field 'colour' (known: "]),
        ({"seds": [1, 2]}, ["unknown field 'seds' (did you mean 'seeds'?)"]),
        ({"workload": {"sizes": "azure-conv-slice", "arrivals": {"process": "gamma"}}},
         ["field 'workload.arrivals.process'"]),
        ({"workload": {"sizes": "azure-conv-slice",
                       "arrivals": {"process": "bursty", "burstFactor": 4, "burstFraction": 0.5,
                                    "periodMs": 1000}}},
         ["burstFraction", "burstFactor"]),
        ({"workload": {"sizes": "azure-conv-slice", "arrivals": {"process": "closed",
                                                                 "thinkMs": 100}},
          "loads": [2.5]}, ["field 'loads'", "users"]),
    ],
)  # fmt: skip
def test_bad_protocol_is_refused_by_sweep_and_simulate(lab, tmp_path, change, words):
    doc = json.loads((lab / "protocols" / "lesson.json").read_text(encoding="utf-8"))
    bad = tmp_path / "protocol.json"
    bad.write_text(json.dumps({**doc, **change}), encoding="utf-8")
    out = tmp_path / "plots"
    for script, args in (
        ("sweep.py", ["--out", str(out)]),
        ("simulate.py", ["--tier", "tiers/small-paged.json", "--output", str(tmp_path / "r.json")]),
    ):
        done = lab_python(lab, script, "--protocol", str(bad), *args)
        assert done.returncode == 2, (script, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and str(bad) in lines[0], (script, lines)
        assert all(w in lines[0] for w in words), (script, lines[0])
    assert not out.exists() and not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--prefill-ms-per-context-token", "-1"], ["--prefill-ms-per-context-token", ">= 0"]),
        (["--decode-ms-per-context-token", "nan"], ["--decode-ms-per-context-token", "finite"]),
        (["--decode-ms-per-context-token", "fast"], ["--decode-ms-per-context-token", "number"]),
    ],
)
def test_bad_context_flag(lab, tmp_path, args, words):
    """argparse's own refusal: the usage, then one error line naming the flag; nothing written."""
    out = tmp_path / "fresh" / "run.json"
    done = lab_python(lab, "simulate.py", "--trace", "burst", *args, "--output", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert all(word in last for word in words), last
    assert not out.exists() and not out.parent.exists()


def test_context_flags_replace_the_devices_context_terms(lab, tmp_path):
    """What a timed case passes the child: the run's device carries the flags' coefficients."""
    out = tmp_path / "run.json"
    flags = ["--prefill-ms-per-context-token", "0.00002", "--decode-ms-per-context-token", "0.001"]
    done = lab_python(
        lab, "simulate.py", "--trace", "kv-pages", "--policy", "timed", *flags, "--output", str(out)
    )
    assert done.returncode == 0, done.stderr
    device = json.loads(out.read_text())["runs"][0]["device"]
    assert device["prefillMsPerContextToken"] == 0.00002
    assert device["decodeMsPerContextToken"] == 0.001
