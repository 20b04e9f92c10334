"""Narratives of unit 08's lesson come from the runs' events: who was preempted in which phase,
and when the LIFO victim started again."""

from __future__ import annotations

from grader.plugins import load_file
from grader.units import LABS_DIR, load_unit


def lesson_file(name: str):
    """A module of unit 08's lesson, loaded by path as the site build loads it."""
    return load_file(LABS_DIR / "unit08" / f"{name}.py")


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
    assert lesson_file("lesson_events").victim_phases(run) == {"decoding": 1, "prefilling": 1}


def test_lifo_victim_restarts_when_its_events_say():
    module = lesson_file("lesson_constructions")
    lifo = module.lifo_victim(module.Runs(load_unit("unit08")))
    events = lifo["runs"]["paged"].run["events"]
    restart = lifo["step"]["restartMs"]
    chunks = [e["startMs"] for e in events if any(c["id"] == "L" for c in e["prefill"])]
    assert restart in chunks and restart > lifo["step"]["startMs"]
    finish = lifo["rows"]["paged"]["finish"]
    assert all(finish[r] <= restart for r in lifo["step"]["doneBefore"])
    assert all(finish[r] > restart for r in lifo["step"]["running"])


def test_the_handout_tells_the_lifo_victims_restart_as_the_run_has_it():
    from grader.units import REPO_ROOT

    module = lesson_file("lesson_constructions")
    lifo = module.lifo_victim(module.Runs(load_unit("unit08")))
    step = lifo["step"]
    assert step["doneBefore"] == ["A"] and step["running"] == ["B"]  # what the handout says
    text = " ".join((REPO_ROOT / "starter" / "unit08" / "README.md").read_text("utf-8").split())
    assert f"{step['restartMs']:.2f} ms A 结束" in text and "这时 B 还在 decode" in text
    assert f"`recomputedTokens` = {step['cache']['L']}" in text
