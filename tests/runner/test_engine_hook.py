"""The engine's ``execute`` hook and the calibrated profile fields (no PyTorch needed)."""

from __future__ import annotations

import json

import pytest

from grader import labfolder, reference


@pytest.mark.parametrize("trace_name", ["mixed", "prefill-only", "unseen"])
def test_hook_returning_model_duration_changes_nothing(unit, solution, trace_name):
    import servesim

    trace = reference.load_trace(unit, trace_name)
    device = reference.device_profile(unit)
    policy = lambda view: solution.chunked(view, chunk=3)  # noqa: E731
    plain = servesim.simulate(trace, policy, device)
    hooked = servesim.simulate(trace, policy, device, execute=device.duration_ms)
    assert [(e.start_ms, e.end_ms, e.batch) for e in hooked.events] == [
        (e.start_ms, e.end_ms, e.batch) for e in plain.events
    ]
    assert [s.token_times_ms for s in hooked.sequences] == [
        s.token_times_ms for s in plain.sequences
    ]


def test_hook_duration_drives_the_clock(unit, solution):
    import servesim

    trace = reference.load_trace(unit, "mixed")
    seen = []

    def execute(batch, context):
        seen.append(dict(context))
        return 0.5

    timeline = servesim.simulate(trace, solution.fcfs, reference.device_profile(unit), execute)
    assert all(e.end_ms - e.start_ms == 0.5 for e in timeline.events)
    # A's 2-token prefill ends at 0.5 ms, before L arrives (2 ms): fcfs decodes A meanwhile
    assert timeline.events[1].batch.decode == ("A",)
    assert seen[1] == {"A": 2}  # context: A's two prompt positions are cached


def test_context_costs_and_json(unit):
    import servesim
    from servesim import Batch, PrefillChunk

    base = reference.device_profile(unit)
    assert "prefillMsPerContextToken" not in base.to_json()  # unit 07 files unchanged
    doc = base.to_json() | {"prefillMsPerContextToken": 0.5, "decodeMsPerContextToken": 0.25}
    profile = servesim.DeviceProfile.from_json(json.loads(json.dumps(doc)))
    chunk = Batch(prefill=(PrefillChunk("a", 3),))
    # formula 31.4: each of the 3 new queries sees the 4 cached keys and the chunk's keys up to
    # and including its own: 5 + 6 + 7 pairs
    assert profile.work_ms(chunk, {"a": 4}) == 3 * 1.0 + 0.5 * (5 + 6 + 7)
    decode = Batch(decode=("a", "b"))
    assert profile.work_ms(decode, {"a": 4, "b": 8}) == 1.0 + 0.25 * 12
    with pytest.raises(ValueError, match="decodeMsPerContextToken"):
        servesim.DeviceProfile.from_json(doc | {"decodeMsPerContextToken": -1})


def test_pure_simulator_never_imports_torch(unit):
    import ast

    lab = labfolder.built(unit)
    files = [*sorted((lab / "servesim").glob("*.py")), lab / "simulate.py", lab / "policies.py"]
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not any(n.split(".")[0] in {"torch", "realdevice"} for n in names), path
