"""The device's features are components (``servesim.components``): the device profile and the
run's limits switch each on, a feature that is off has no part in the engine's state, and
every run-file field a component says it owns is one the published run schema describes."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from servesim import DeviceProfile, components, parse_trace
from servesim.arrivals import Arrivals
from servesim.state import EngineState

from grader.units import load_unit

TRACE = parse_trace(
    {"name": "one", "requests": [{"id": "R0", "arrivalMs": 0, "inputTokens": 4, "outputTokens": 2}]}
)
PLAIN = DeviceProfile()


def parts(device, **limits) -> list[str]:
    return [type(part).__name__ for part in EngineState(device, Arrivals(TRACE), **limits).parts]


@pytest.mark.parametrize(
    "device,limits,expected",
    [
        (PLAIN, {}, ["Lifecycle"]),
        (PLAIN, {"queue_cap": 3}, ["Admission", "Lifecycle"]),
        (PLAIN, {"admit": lambda seq, view: True}, ["Admission", "Lifecycle"]),
        (replace(PLAIN, kv_pages=8, prefix_caching=True), {}, ["Lifecycle", "PrefixPages"]),
        (replace(PLAIN, kv_pages=8, host_pages=8), {}, ["Lifecycle", "Swap"]),
        (replace(PLAIN, stream_buffer_bytes=1024), {}, ["Lifecycle", "Buffers"]),
    ],
)
def test_the_profile_and_the_limits_switch_each_feature_on(device, limits, expected):
    assert parts(device, **limits) == expected


def test_a_feature_that_is_off_leaves_nothing_in_the_state_or_the_view():
    state = EngineState(PLAIN, Arrivals(TRACE))
    assert (state.pool, state.streams) == (None, None)
    assert state.hooks("before_step") == state.hooks("after_step") == ()
    view = state.view(0.0, None)
    assert (view.pool, view.streams) == (None, None)
    streaming = EngineState(replace(PLAIN, stream_buffer_bytes=1024), Arrivals(TRACE))
    assert streaming.streams is not None and len(streaming.hooks("after_step")) == 1


def test_every_field_a_component_owns_is_in_the_published_run_schema():
    unit = load_unit("unit09")  # the unit whose run files carry every feature's fields
    schema = json.loads((unit.lab_dir / "schemas" / "run.schema.json").read_text("utf-8"))
    published = {
        "event": set(schema["$defs"]["event"]["properties"]),
        "request": set(schema["$defs"]["request"]["properties"]),
    }
    owned = {
        "event": {f for c in components.COMPONENTS for f in c.event_fields},
        "request": {f for c in components.COMPONENTS for f in c.request_fields},
    }
    assert owned["event"] and owned["request"]
    assert owned["event"] <= published["event"] and owned["request"] <= published["request"]


def test_a_component_is_registered_once_and_before_one_that_exists():
    extra = components.Component("extra")
    components.register(extra, before="swap")
    try:
        names = [c.name for c in components.COMPONENTS]
        assert names.index("extra") == names.index("swap") - 1
        with pytest.raises(ValueError, match="registered already"):
            components.register(extra)
    finally:
        components.unregister("extra")
    with pytest.raises(ValueError, match="no component named 'nothing'"):
        components.register(extra, before="nothing")
    assert "extra" not in [c.name for c in components.COMPONENTS]
