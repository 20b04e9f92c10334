"""Narratives of unit 08's lesson come from the runs' events: who was preempted in which phase,
and when the LIFO victim started again."""

from __future__ import annotations

import sys

from grader.units import LABS_DIR, load_unit


def lesson_runs():
    sys.path.insert(0, str(LABS_DIR / "unit08"))
    try:
        import lesson_runs as module
    finally:
        sys.path.pop(0)
    return module


def step(prefill=(), decode=(), preempt=()):
    return {
        "prefill": [{"id": i, "tokens": 4} for i in prefill],
        "decode": list(decode),
        "preempt": list(preempt),
    }


def test_victim_phase_is_the_victims_last_step_before_the_preemption():
    run = {
        "events": [
            step(prefill=["a"]),
            step(decode=["a"], prefill=["b"]),
            step(decode=["a"], preempt=["b"]),  # b was prefilling
            step(prefill=["b"], decode=["a"]),
            step(decode=["a", "b"]),
            step(decode=["a"], preempt=["b"]),  # b was decoding
        ]
    }
    assert lesson_runs().victim_phases(run) == {"decoding": 1, "prefilling": 1}


def test_lifo_victim_restarts_when_its_events_say():
    module = lesson_runs()
    lifo = module.lifo_victim(module.Runs(load_unit("unit08")))
    events = lifo["runs"]["paged"].run["events"]
    restart = lifo["step"]["restartMs"]
    chunks = [e["startMs"] for e in events if any(c["id"] == "L" for c in e["prefill"])]
    assert restart in chunks and restart > lifo["step"]["startMs"]
    finish = lifo["rows"]["paged"]["finish"]
    assert all(finish[r] <= restart for r in lifo["step"]["doneBefore"])
    assert all(finish[r] > restart for r in lifo["step"]["running"])
