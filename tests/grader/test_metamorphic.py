"""Metamorphic relations on the reference: relabelling ids relabels results; shifting arrivals
by a constant shifts every time by it. The grader's relabelled cases rely on both."""

from __future__ import annotations

import json

import pytest
import servesim

from grader import reference
from grader.cases import case_trace_doc, load_grading, trace_path
from grader.course.golden import load_golden
from grader.traces import metamorphic

TRACES = ["mixed", "unseen", "ties", "bursty-gamma", "idle-gaps", "azure-conv"]
POLICIES = [("fcfs", {}), ("chunked", {"chunk": 2}), ("chunked", {"chunk": 3})]


def _run(unit, doc, policy, params):
    trace = servesim.parse_trace(doc, source=doc.get("name", "trace"))
    return reference.run_reference(unit, trace, policy, params, reference.device_profile(unit))


def _close(a, b):
    """Equal JSON values, numbers within 1e-6."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= 1e-6
    return a == b


def _doc(unit, name):
    path = unit.traces_dir / "hidden" / f"{name}.json"
    if not path.exists():
        path = unit.lab_dir / "traces" / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", TRACES)
@pytest.mark.parametrize(("policy", "params"), POLICIES)
def test_relabelling_relabels_results(unit, name, policy, params):
    doc = _doc(unit, name)
    mapping = metamorphic.relabel_mapping([r["id"] for r in doc["requests"]], seed=3)
    assert sorted(mapping.values()) != sorted(mapping)  # the ids really change
    got = _run(unit, metamorphic.relabel_trace(doc, mapping), policy, params)
    want = metamorphic.relabel_run(_run(unit, doc, policy, params), mapping)
    assert _close(got, want)


@pytest.mark.parametrize("name", TRACES)
@pytest.mark.parametrize(("policy", "params"), POLICIES)
@pytest.mark.parametrize("delta", [0.25, 17.5])
def test_shifting_arrivals_shifts_times(unit, name, policy, params, delta):
    doc = _doc(unit, name)
    got = _run(unit, metamorphic.shift_trace(doc, delta), policy, params)
    want = metamorphic.shift_run(_run(unit, doc, policy, params), delta)
    assert _close(got, want)


def test_transformed_cases_hold_the_relations(unit):
    """Golden results of the grader's transformed cases are the transformed golden results."""
    grading = load_grading(unit)
    transformed = [c for c in grading.cases if c.transform is not None]
    assert transformed, "unit.yaml should grade at least one relabelled copy of a public trace"
    for case in transformed:
        assert case.hidden
        source = json.loads(trace_path(unit, case).read_text(encoding="utf-8"))
        doc = case_trace_doc(unit, case)
        assert {r["id"] for r in doc["requests"]}.isdisjoint(r["id"] for r in source["requests"])
        plain = _run(unit, source, case.policy, case.params)
        mapping = case.transform.mapping([r["id"] for r in source["requests"]])
        want = metamorphic.shift_run(
            metamorphic.relabel_run(plain, mapping), case.transform.shift_ms
        )
        assert _close(load_golden(unit, case)["run"], want)


def test_transform_spec_errors():
    with pytest.raises(ValueError, match="unknown field"):
        metamorphic.Transform.from_json({"relabel": 1})
    with pytest.raises(ValueError, match="shiftMs"):
        metamorphic.Transform.from_json({"shiftMs": -1})
