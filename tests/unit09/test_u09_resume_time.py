"""Issue 50: the given ``first_resume`` waits until the engine's own resume time.

A level recomputed from now (``now + (level - low) / rate``) can round to the low mark a moment
before the engine's closed-form resume time: the stream is still paused, yet ``Wait`` gets a time
that is not later than now and the engine refuses it. Sample variant 0's stream-burst (a drawn
trace of a student's variant) hit it under the reference ``backpressure``.
"""

from __future__ import annotations

import json

import servesim

from grader import reference
from grader.cases import load_grading
from grader.course import golden
from grader.units import load_unit
from grader.variants import drawn, sample


def test_backpressure_runs_a_drawn_stream_trace_whose_resume_time_rounds():
    unit = load_unit("unit09")
    case = load_grading(unit).by_id("backpressure-burst-b128")
    doc = json.loads(drawn.hidden_traces(unit, sample.sample_key(0))["stream-burst"])
    trace = servesim.parse_trace(doc, source="sample-000 stream-burst")
    device = golden.case_device(unit, case)
    run = reference.run_reference(unit, trace, case.policy, case.params, device)
    assert len(run["requests"]) == len(doc["requests"]) == 48
    paused = [r for r in run["requests"] if r.get("pausedMs")]
    assert paused  # the trace does pause streams: the rule is exercised
