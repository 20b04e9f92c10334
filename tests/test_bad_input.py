"""Bad traces and flags: one error line naming the request and field, exit 2, no file touched."""

import json

import pytest
from labtools import simulate_cli

GOOD = {"id": "A", "arrivalMs": 0, "inputTokens": 2, "outputTokens": 3}
SECOND = {"id": "B", "arrivalMs": 1, "inputTokens": 1, "outputTokens": 1}


def trace_with(**changes):
    second = {k: v for k, v in {**SECOND, **changes}.items() if v is not ...}
    return {"name": "bad", "requests": [GOOD, second]}


CASES = {
    "missing field": (trace_with(outputTokens=...), ["'B'", "outputTokens", "missing"]),
    "negative arrival": (trace_with(arrivalMs=-1), ["'B'", "arrivalMs"]),
    "infinite arrival": (
        '{"requests": [{"id": "B", "arrivalMs": Infinity, "inputTokens": 1, "outputTokens": 1}]}',
        ["'B'", "arrivalMs", "finite"],
    ),
    "nan arrival": (trace_with(arrivalMs=float("nan")), ["'B'", "arrivalMs"]),
    "zero tokens": (trace_with(inputTokens=0), ["'B'", "inputTokens"]),
    "negative tokens": (trace_with(outputTokens=-2), ["'B'", "outputTokens"]),
    "fractional tokens": (trace_with(inputTokens=2.5), ["'B'", "inputTokens", "integer"]),
    "boolean tokens": (trace_with(outputTokens=True), ["'B'", "outputTokens"]),
    "duplicate id": (trace_with(id="A"), ["'A'", "#2", "duplicates"]),
    "invalid json": ('{"requests": [', ["not valid JSON"]),
    "no requests": ({"name": "empty", "requests": []}, ["requests"]),
    "misspelt deadline": (
        trace_with(deadlinMs=5),
        ["request 'B': unknown field 'deadlinMs' (did you mean 'deadlineMs'?)"],
    ),
    "misspelt declared maximum": (
        trace_with(maxOutputTokns=4),
        ["request 'B': unknown field 'maxOutputTokns' (did you mean 'maxOutputTokens'?)"],
    ),
    "misspelt required field": (
        trace_with(inputTokens=..., inputTokns=2),
        ["request 'B': unknown field 'inputTokns' (did you mean 'inputTokens'?)"],
    ),
    "misspelt top-level field": (
        {"name": "bad", "descripton": "x", "requests": [GOOD]},
        ["unknown field 'descripton' (did you mean 'description'?)"],
    ),
    "unknown field, nothing close": (
        trace_with(colour="red"),
        ["request 'B': unknown field 'colour' (known: arrivalMs, cancelMs, deadlineMs, id,"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_trace(solved_lab, tmp_path, case):
    doc, words = CASES[case]
    trace = tmp_path / "bad.json"
    trace.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    fresh = tmp_path / "fresh" / "run.json"
    kept = tmp_path / "kept.json"
    kept.write_text("previous results")
    for output in (fresh, kept):
        done = simulate_cli(solved_lab, "--trace", str(trace), "--output", str(output))
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        for word in words:
            assert word in lines[0]
        assert done.stdout == ""
    assert not fresh.exists()
    assert kept.read_text() == "previous results"


def test_unknown_trace_name(solved_lab, tmp_path):
    done = simulate_cli(solved_lab, "--trace", "nosuch", "--output", str(tmp_path / "r.json"))
    assert done.returncode == 2
    assert "unknown trace 'nosuch'" in done.stderr and "mixed" in done.stderr
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(
    "flags", [["--chunk", "0"], ["--chunk", "x"], ["--overhead-ms", "-1"], ["--policy", "lifo"]]
)
def test_bad_flags(solved_lab, flags):
    done = simulate_cli(solved_lab, "--trace", "mixed", *flags)
    assert done.returncode == 2
    assert "error:" in done.stderr


def test_stub_policy_names_the_function(tmp_path):
    from labtools import copy_lab

    lab = copy_lab(tmp_path / "lab", solution=False)
    done = simulate_cli(lab, "--trace", "mixed", "--output", "runs/x.json")
    assert done.returncode == 1
    assert "fcfs() in policies.py is not implemented yet" in done.stderr
    assert not (lab / "runs" / "x.json").exists()
