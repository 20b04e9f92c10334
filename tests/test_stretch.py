"""A stretch of identical decode-only steps (``servesim.stretch``) gives exactly the state that
its single steps give.

Each run is driven twice through ``recorded.Recorded``: once a step at a time (as the trusted
replay drives it), once taking every run of identical decode-only steps as stretches
(``Recorded.stretch``). At every stretch boundary the two states are equal (every sequence's
fields and token times, the queues, the holders, the totals, the components' parts, the
arrivals still to come), and so is what the viewer draws of every step inside it: the queue
when its batch is applied, the pages right after it, the paused streams. The runs: every
public trace of every unit under every policy (``test_view_pages``' cases), a seeded sample of
the golden runs, and the single-step rule ``rules.page_opens`` against ``rules.pages_added``.
"""

from __future__ import annotations

import random
from dataclasses import fields

import pytest
from servesim import rules
from servesim.device import DeviceProfile
from servesim.runview import model
from servesim.runview.driving import steady
from servesim.sequence import Sequence
from test_view_pages import _cases

from grader import reference
from grader.course import starter
from grader.units import CODE_ROOT, load_unit

GOLDEN_SAMPLE = 16
_NOT_STATE = ("state", "pool", "streams")  # the state itself; parts compared by their own fields


def _plain(value):
    """``value`` with each ``Sequence`` as its id and containers as lists (what compares)."""
    if isinstance(value, Sequence):
        return value.id
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "deque":
        return [_plain(v) for v in value]
    return value


def snapshot(driven) -> dict:
    """Everything a later step or a reader of ``driven``'s state can see."""
    state = driven.state
    tally = state.tally
    parts = [
        {k: _plain(v) for k, v in vars(part).items() if k not in _NOT_STATE and not callable(v)}
        for part in state.parts
    ]
    seqs = [
        tuple(_plain(getattr(seq, f.name)) for f in fields(Sequence))
        for seq in state.arrivals.sequences
    ]
    return {
        "seqs": seqs,
        "waiting": [*_plain(state.waiting.front), "|", *_plain(state.waiting.fresh)],
        "unstarted": state.waiting.unstarted,
        "running": _plain(state.running),
        "holding": list(state.holding),
        "swapped": _plain(state.swapped),
        "live": list(state.live),
        "tally": (tally.active, tally.pages, tally.reserved, tally.host, tally.changes),
        "step_pages": state.step_pages,
        "starts": state._starts,
        "arrivals": _plain(sorted(state.arrivals._heap, key=lambda e: e[:2])),
        "parts": parts,
        "streams": None if state.streams is None else _plain(state.streams.paused),
        "previous": driven.previous,
    }


def _single(driven, event: dict, prev_end: float) -> tuple:
    """One step through ``Recorded.step``, as the viewer drives it; what it draws of it."""
    start = event["startMs"]
    driven.gap(prev_end, start)
    driven.reach(prev_end, start)
    state = driven.state
    seen = (len(state.waiting), () if state.streams is None else tuple(state.streams.paused))
    refused = driven.step(driven.batch_of(event), start, event["endMs"])
    assert refused is None, refused
    return (*seen, state.step_pages)


def compare(run: dict) -> int:
    """Drive ``run`` both ways and compare at every stretch boundary; the longest stretch."""
    one, many = model._recorded(run), model._recorded(run)
    events = run["events"]
    ends = [e["endMs"] for e in events]
    one.fire(0.0, (0.0, 0.0))
    many.fire(0.0, (0.0, 0.0))
    n, prev_end, longest = 0, 0.0, 0
    while n < len(events):
        stop = steady(events, n)
        if stop == n + 1:
            drawn = [_single(many, events[n], prev_end)]
            taken = 1
        else:  # the steps of a stretch start where the last ended: no gap to fire
            many.gap(prev_end, events[n]["startMs"])
            many.reach(prev_end, events[n]["startMs"])
            state = many.state
            queue = len(state.waiting)
            paused = () if state.streams is None else tuple(state.streams.paused)
            base = state.tally.pages  # after the last step's finished left
            got = many.stretch(many.batch_of(events[n]), events[n]["startMs"], ends, n, stop)
            assert got.refused is None, got.refused
            taken = got.steps
            if got.opens is None:
                pages = [state.step_pages]
            else:
                pages = [base + sum(1 for o in got.opens if o <= j) for j in range(1, taken + 1)]
                assert pages[-1] == state.step_pages
            drawn = [(queue, paused, p) for p in pages]
        single = []
        for k in range(n, n + taken):
            single.append(_single(one, events[k], prev_end))
            prev_end = events[k]["endMs"]
        assert drawn == single, f"steps {n}..{n + taken - 1}: the views differ"
        if taken > 1:  # a single step is the same code both ways
            assert snapshot(many) == snapshot(one), f"after steps {n}..{n + taken - 1}"
        longest = max(longest, taken)
        n += taken
    assert snapshot(many) == snapshot(one)
    return longest


@pytest.mark.parametrize("unit_id,trace,device_file,policy,params", list(_cases()))
def test_stretches_equal_single_steps_on_public_traces(unit_id, trace, device_file, policy, params):
    unit = load_unit(unit_id)
    device = starter._snapshot_device(unit, {"device": device_file} if device_file else {})
    spec = next(p for p in unit.policies if p["name"] == policy)
    params = {name: meta["default"] for name, meta in spec["params"].items()} | {
        k: v for k, v in params.items() if k in spec["params"]
    }
    run = reference.run_reference(unit, reference.load_trace(unit, trace), policy, params, device)
    longest = compare(run)
    if not (device.prefix_caching or device.streams) and len(run["events"]) > 200:
        assert longest > 1, "no stretch was taken"


def _golden_sample() -> list:
    paths = sorted(CODE_ROOT.glob("traces/*/golden/*.json"))
    return random.Random(49).sample(paths, min(GOLDEN_SAMPLE, len(paths)))


@pytest.mark.parametrize("path", _golden_sample(), ids=lambda p: f"{p.parent.parent.name}-{p.stem}")
def test_stretches_equal_single_steps_on_golden_runs(path):
    import json

    run = json.loads(path.read_text(encoding="utf-8"))["run"]
    compare(run)


def test_stretches_are_taken_and_cut_where_the_rules_act():
    """A long steady run is taken in long stretches, cut by arrivals, finishes and pages."""
    unit = load_unit("unit08")
    device = starter._snapshot_device(unit, {"device": "devices/pool-256.json"})
    trace = reference.load_trace(unit, "burst")
    run = reference.run_reference(unit, trace, "paged", {"budget": 512}, device)
    assert compare(run) >= 16


@pytest.mark.parametrize("page", [1, 2, 16])
def test_page_opens_is_the_single_decode_page_rule(page):
    device = DeviceProfile(kv_pages=None, page_tokens=page)
    for cached in range(0, 3 * page + 2):
        for steps in range(0, 3 * page + 2):
            single = [
                j for j in range(1, steps + 1) if rules.pages_added(device, cached + j - 1, 1)
            ]
            assert list(rules.page_opens(device, cached, steps)) == single


def test_a_stretch_stops_where_the_page_pool_refuses_a_step():
    """A forged run decodes two requests past an 8-page pool (their 4th page each, at decode
    49): stepping singly refuses that step; a stretch runs exactly the steps before it, and the
    step itself is refused with the same rule."""
    from servesim import parse_trace
    from servesim.batch import Batch, PrefillChunk
    from servesim.recorded import Recorded

    rows = [{"id": rid, "arrivalMs": 0, "inputTokens": 16, "outputTokens": 100} for rid in "AB"]
    device = DeviceProfile(kv_pages=8, page_tokens=16)
    ends = [float(n + 1) for n in range(100)]
    prefill = Batch((), (PrefillChunk("A", 16), PrefillChunk("B", 16)))
    decode = Batch(("A", "B"), ())
    refusals = []
    for stretches in (False, True):
        driven = Recorded(parse_trace({"requests": rows}), device)
        driven.fire(0.0, (0.0, 0.0))
        assert driven.step(prefill, 0.0, ends[0]) is None
        n = 1
        while True:
            if stretches:
                got = driven.stretch(decode, ends[n - 1], ends, n, len(ends))
                refused, n = got.refused, n + got.steps
            else:
                refused = driven.step(decode, ends[n - 1], ends[n])
                n += refused is None
            if refused is not None:
                refusals.append((n, refused[0], driven.state.tally.pages))
                break
    assert refusals[0] == refusals[1] == (49, "kvPages", 8)


def _one_at_a_time(view):
    """Decode whatever runs; else prefill the queue's head whole (requests wait meanwhile)."""
    from servesim.batch import Batch, PrefillChunk

    if view.running:
        return Batch(tuple(seq.id for seq in view.running), ())
    head = view.waiting[0]
    return Batch((), (PrefillChunk(head.id, head.remaining_prefill),))


def test_stretches_stop_at_arrivals_deadlines_and_client_cancels():
    """While A decodes alone, B's deadline passes and C's client cancels: both leave at the
    step end the rules name, which a stretch must not pass over."""
    from servesim import parse_trace, simulate
    from servesim.runfile import build_run

    rows = [
        {"id": "A", "arrivalMs": 0, "inputTokens": 4, "outputTokens": 60},
        {"id": "B", "arrivalMs": 1, "inputTokens": 4, "outputTokens": 5, "deadlineMs": 10},
        {"id": "C", "arrivalMs": 2, "inputTokens": 4, "outputTokens": 5, "cancelMs": 20.1},
        {"id": "D", "arrivalMs": 30.5, "inputTokens": 4, "outputTokens": 5},
    ]
    device = DeviceProfile(decode_batch_ms=1.0)
    timeline = simulate(parse_trace({"requests": rows}), _one_at_a_time, device)
    run = build_run("one", {}, device, timeline, None, extended=True)
    status = {r["id"]: r.get("status") for r in run["requests"]}
    assert status["B"] == status["C"] == "cancelled", status
    assert compare(run) > 10
