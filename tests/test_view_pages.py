"""The run viewer's KV line, queue and pauses are the engine's own at every step of every public
trace of every unit: shared prefix pages once, paused streams' pages kept; the queue is the
engine's waiting queue when the step's batch is chosen, the paused streams its paused streams
then.

The engine's count is its running total (``view.tally.pages``, the prefix cache's ``in_use``
with ``prefixCaching``) read right after each step's batch has run and before the requests it
finished let their pages go, which is where the viewer draws a step. A device without a page
limit keeps no count, so such a device runs here with a limit no run reaches."""

from __future__ import annotations

import bisect
from dataclasses import replace

import pytest
from servesim.runview import model, page
from servesim.state import EngineState

from grader import reference
from grader.course import starter
from grader.units import load_unit, unit_ids

NEVER_REACHED = 10**9


def _cases():
    """(unit, trace, device spec, policy, params): every public trace on the unit's device
    under every policy, and every public snapshot as the unit states it."""
    for unit_id in unit_ids():
        unit = load_unit(unit_id)
        for trace in unit.public_traces:
            for policy in unit.policies:
                yield pytest.param(
                    unit_id,
                    trace,
                    None,
                    policy["name"],
                    {},
                    id=f"{unit_id}-{trace}-{policy['name']}",
                )
        for spec in starter.snapshot_specs(unit):
            if spec.keys() == {"id", "trace"}:  # a public trace on the unit's device: above
                continue
            for policy in unit.policies:
                if "policies" not in spec or policy["name"] in spec["policies"]:
                    yield pytest.param(
                        unit_id, spec["trace"], spec.get("device"), policy["name"],
                        spec.get("params", {}), id=f"{unit_id}-{spec['id']}-{policy['name']}",
                    )  # fmt: skip


def engine_run(unit, trace, device_file, policy, overrides, monkeypatch, seen=None):
    """The reference run entry, the engine's page count after each step's batch and after the
    requests it finished let theirs go; ``seen`` (a list) gets, per step, the engine's waiting
    queue length and its paused streams when the step's batch is applied."""
    device = starter._snapshot_device(unit, {"device": device_file} if device_file else {})
    if device.kv_pages is None:
        device = replace(device, kv_pages=NEVER_REACHED)
    spec = next(p for p in unit.policies if p["name"] == policy)
    params = {name: meta["default"] for name, meta in spec["params"].items()}
    params |= {k: v for k, v in overrides.items() if k in params}
    counts, left = [], []
    finish = EngineState._finish

    def counting(self, done, end):
        counts.append(self.tally.pages)
        finish(self, done, end)
        left.append(self.tally.pages)

    run_step = EngineState.run_step

    def watching(self, batch, start_ms, end):
        paused = () if self.streams is None else tuple(self.streams.paused)
        seen.append((len(self.waiting), paused))
        run_step(self, batch, start_ms, end)

    monkeypatch.setattr(EngineState, "_finish", counting)
    if seen is not None:
        monkeypatch.setattr(EngineState, "run_step", watching)
    run = reference.run_reference(unit, reference.load_trace(unit, trace), policy, params, device)
    monkeypatch.setattr(EngineState, "_finish", finish)
    monkeypatch.setattr(EngineState, "run_step", run_step)
    return run, counts, left


@pytest.mark.parametrize("unit_id,trace,device_file,policy,params", list(_cases()))
def test_kv_line_is_the_engines_count(unit_id, trace, device_file, policy, params, monkeypatch):
    unit = load_unit(unit_id)
    run, counts, _ = engine_run(unit, trace, device_file, policy, params, monkeypatch)
    drawn = [step.kv_pages for step in model.replay(run).steps]
    assert len(counts) == len(run["events"]) > 0
    first = next((n for n, (a, b) in enumerate(zip(drawn, counts)) if a != b), None)
    assert first is None, (
        f"step {first}: the viewer draws {drawn[first]} pages, the engine holds {counts[first]}"
    )


@pytest.mark.parametrize("unit_id,trace,device_file,policy,params", list(_cases()))
def test_queue_and_pauses_are_the_engines(unit_id, trace, device_file, policy, params, monkeypatch):
    unit, seen = load_unit(unit_id), []
    run, _, _ = engine_run(unit, trace, device_file, policy, params, monkeypatch, seen)
    drawn = [(step.queue, tuple(step.paused)) for step in model.replay(run).steps]
    assert len(seen) == len(run["events"]) > 0
    first = next((n for n, (a, b) in enumerate(zip(drawn, seen)) if a != b), None)
    assert first is None, (
        f"step {first}: the viewer draws queue {drawn[first][0]} and paused "
        f"{list(drawn[first][1])}, the engine has {seen[first][0]} and {list(seen[first][1])}"
    )


def test_overview_keeps_paused_streams_pages_while_the_device_idles(monkeypatch):
    """slow-readers under backpressure: the device idles while every stream that could run is
    paused, and those streams hold their pages all the while. A chart column without a step
    draws the level of the step before it, never 0 while the engine holds pages."""
    unit = load_unit("unit09")
    run, counts, left = engine_run(
        unit, "slow-readers", "devices/streaming.json", "backpressure", {}, monkeypatch
    )
    picture = model.replay(run)
    assert any(step.paused for step in picture.steps), "no step is drawn with a paused stream"
    cols = picture.columns
    end = max(cols.end_ms)
    _, pages = page.overview_columns(cols, end)
    idle = 0
    for c, drawn in enumerate(pages):
        at = c * end / page.COLUMNS
        k = bisect.bisect_right(cols.start_ms, at) - 1  # the last step started by then
        if (
            k < 0
            or cols.end_ms[k] > at
            or bisect.bisect_right(cols.start_ms, (c + 1) * end / page.COLUMNS) - 1 > k
        ):
            continue  # a step runs in this column
        idle += left[k] > 0
        assert drawn == counts[k] >= left[k], (c, drawn, counts[k], left[k])
        assert drawn > 0 or left[k] == 0, f"column {c} draws 0 pages, the engine holds {left[k]}"
    assert idle > 10, "the run never idles while the engine holds pages"
