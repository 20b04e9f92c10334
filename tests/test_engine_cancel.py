"""Client cancellation (trace ``cancelMs``, unit 09): the trace field, the engine's rule
(terminal, monotone, pages released once, late events do nothing), the replay's check of it and
its refusal of forged runs, and a property test on random small traces."""

from __future__ import annotations

import copy

import pytest
from engine_policies import random_policy
from hypothesis import given, settings
from hypothesis import strategies as st
from servesim import (
    Batch,
    DeviceProfile,
    PrefillChunk,
    Status,
    TraceError,
    Wait,
    parse_trace,
    simulate,
)
from servesim.runfile import build_run, uses_lifecycle
from servesim.view import Tally

from grader import fastpath
from grader.units import load_unit
from grader.verify import replay_run
from grader.verify.problems import ProblemKind


def trace_of(*rows):
    """Requests R0, R1, ... from ``(arrivalMs, inputTokens, outputTokens, cancelMs)`` rows."""
    reqs = []
    for i, (arrival, n_in, n_out, cancel) in enumerate(rows):
        req = {"id": f"R{i}", "arrivalMs": arrival, "inputTokens": n_in, "outputTokens": n_out}
        if cancel is not None:
            req["cancelMs"] = cancel
        reqs.append(req)
    return parse_trace({"name": "cancels", "requests": reqs})


def fcfs_decode_first(view):
    """Decode every running sequence, and give the queue head its whole remaining prefill
    when that fits."""
    decode = Batch(decode=[s.id for s in view.running])
    if not view.waiting:
        return decode
    head = view.waiting[0]
    both = Batch(decode=decode.decode, prefill=[PrefillChunk(head.id, head.remaining_prefill)])
    return both if view.fits(both) or not decode.decode else decode


def run_of(trace, device, policy=fcfs_decode_first, **limits):
    timeline = simulate(trace, policy, device, **limits)
    lim = {"budget": limits.get("budget"), "queueCap": limits.get("queue_cap")}
    return timeline, build_run("p", {}, device, timeline, None, extended=True, limits=lim)


def bad(run, trace, device) -> dict[str, str]:
    problems, _ = replay_run(run, trace, device.to_json())
    return {p.statistic: p.message for p in problems if p.kind is ProblemKind.INVALID_SCHEDULE}


# -- the trace field ----------------------------------------------------------------------------


def test_cancel_and_prefix_fields_parse():
    trace = parse_trace(
        {
            "requests": [
                {
                    "id": "a",
                    "arrivalMs": 0,
                    "inputTokens": 40,
                    "outputTokens": 2,
                    "cancelMs": 7,
                    "prefix": [{"id": "sys", "tokens": 16}, {"id": "doc", "tokens": 24}],
                }
            ]
        }
    )
    (req,) = trace.requests
    assert req.cancel_ms == 7.0 and req.prefix == (("sys", 16), ("doc", 24))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"cancelMs": 0}, "field 'cancelMs' must be a finite number > 0, got 0"),
        ({"cancelMs": True}, "field 'cancelMs' must be a finite number > 0, got True"),
        ({"cancelMS": 3}, "unknown field 'cancelMS' (did you mean 'cancelMs'?)"),
        ({"prefix": []}, "field 'prefix' must be a non-empty list of segments"),
        ({"prefix": [{"id": "s", "tokens": 0}]}, "'tokens' must be an integer >= 1, got 0"),
        ({"prefix": [{"id": "", "tokens": 2}]}, "'id' must be a non-empty string"),
        ({"prefix": [{"id": "s", "tokns": 2}]}, "unknown field 'tokns' (did you mean 'tokens'?)"),
        ({"prefix": [{"id": "s", "tokens": 9}]}, "covers 9 tokens, more than inputTokens (8)"),
    ],
)
def test_bad_cancel_or_prefix_is_one_clear_error(extra, message):
    req = {"id": "a", "arrivalMs": 0, "inputTokens": 8, "outputTokens": 2, **extra}
    with pytest.raises(TraceError) as info:
        parse_trace({"requests": [req]}, source="t")
    assert message in str(info.value) and "request 'a'" in str(info.value)


# -- the engine's rule ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cancel", "status", "tokens", "at"),
    [
        # steps end at 10.25 (prefill, first token), 11.5, 12.75, 14.0 (decodes)
        (1, Status.CANCELLED, 1, 10.25),  # during its prefill step: seen at that step's end
        (11, Status.CANCELLED, 2, 11.5),  # while decoding: at the first step end after it
        (12.75, Status.CANCELLED, 3, 12.75),  # exactly at a step end: seen there
        (500, Status.COMPLETED, 4, 14.0),  # after it completed: a late cancel does nothing
    ],
)
def test_a_cancel_is_seen_at_the_first_step_end_at_or_after_it(cancel, status, tokens, at):
    timeline, _ = run_of(trace_of((0, 10, 4, cancel)), DeviceProfile())
    (seq,) = timeline.sequences
    assert (seq.status, len(seq.token_times_ms), seq.status_ms) == (status, tokens, at)


def test_cancelled_waiting_request_never_runs_and_frees_the_queue():
    device = DeviceProfile(max_active=1)
    trace = trace_of((0, 10, 3, None), (1, 4, 2, 2))  # R1 waits behind R0 and is cancelled
    timeline, run = run_of(trace, device, queue_cap=1)
    r0, r1 = timeline.sequences
    assert r1.status is Status.CANCELLED and r1.status_ms == 10.25 and r1.token_times_ms == []
    assert not any("R1" in e.batch.ids for e in timeline.events)
    assert r0.status is Status.COMPLETED
    assert bad(run, trace, device) == {}


def test_pages_are_released_once_and_terminating_twice_does_nothing():
    device = DeviceProfile(kv_pages=8, page_tokens=4)
    trace = trace_of((0, 10, 6, 12), (0, 5, 3, 3))
    seen = []

    def watching(view):
        recount = Tally.of(device, [*view.waiting, *view.running])
        seen.append((view.active, view.pages_held, recount.active, recount.pages))
        return fcfs_decode_first(view)

    timeline, run = run_of(trace, device, watching)
    for active, pages, recount_active, recount_pages in seen:
        assert (active, pages) == (recount_active, recount_pages)
    assert [s.status for s in timeline.sequences] == [Status.CANCELLED, Status.CANCELLED]
    assert bad(run, trace, device) == {}


def test_terminate_is_terminal_and_a_late_preempt_does_not_requeue():
    from servesim.arrivals import Arrivals
    from servesim.state import EngineState

    device = DeviceProfile(kv_pages=8, page_tokens=4)
    trace = trace_of((0, 6, 3, None))
    state = EngineState(device, Arrivals(trace))
    state.admit_due(0.0)
    state.run_step(Batch(prefill=[PrefillChunk("R0", 6)]), 0.0, 6.25)
    (seq,) = state.running
    assert state.tally.pages == 2 and state.tally.active == 1
    assert state.terminate(seq, Status.CANCELLED, 6.25) is True
    assert (state.tally.pages, state.tally.active, state.running) == (0, 0, [])
    assert state.terminate(seq, Status.CANCELLED, 7.0) is False  # a second cancel
    state._preempt(seq)  # a preemption's re-queue arriving late
    assert (seq.status, seq.status_ms, len(state.waiting)) == (Status.CANCELLED, 6.25, 0)
    assert (state.tally.pages, state.tally.active) == (0, 0)


def test_cancel_of_a_swapped_out_sequence_frees_its_host_pages():
    device = DeviceProfile(kv_pages=4, page_tokens=4, host_pages=8)
    trace = trace_of((0, 8, 5, 15), (0, 4, 2, None))
    script = iter(
        [
            Batch(prefill=[PrefillChunk("R0", 8)]),
            Batch(swap_out=["R0"], prefill=[PrefillChunk("R1", 4)]),
            Batch(decode=["R1"]),
            Wait(20.0),  # R0 stays swapped out; its client cancels at 15 while the device idles
        ]
    )
    hosts = []

    def policy(view):
        hosts.append(view.host_pages_held)
        return next(script)

    timeline, run = run_of(trace, device, policy)
    r0, r1 = timeline.sequences
    assert r0.status is Status.CANCELLED and r0.status_ms == 20.0 and r1.status is Status.COMPLETED
    assert hosts == [0, 0, 2, 2]
    assert bad(run, trace, device) == {}


# -- the replay --------------------------------------------------------------------------------


def test_forged_run_scheduling_a_cancelled_request_is_refused_by_name():
    device = DeviceProfile()
    trace = trace_of((0, 10, 6, 11))
    _, run = run_of(trace, device)
    assert bad(run, trace, device) == {}
    forged = copy.deepcopy(run)
    last = forged["events"][-1]
    forged["events"].append(
        {
            **last,
            "index": len(forged["events"]),
            "startMs": last["endMs"],
            "endMs": last["endMs"] + 1.25,
        }
    )
    assert "terminated request scheduled" in bad(forged, trace, device)


def test_forged_run_that_ignores_a_cancel_is_refused_by_name():
    device = DeviceProfile()
    honest = trace_of((0, 10, 6, None))
    _, run = run_of(honest, device)  # completes; the same log for a client that cancels at 11
    cancelled = trace_of((0, 10, 6, 11))
    run["requests"][0]["cancelMs"] = 11
    assert "cancel" in bad(run, cancelled, device)
    wrong_time = copy.deepcopy(run_of(cancelled, device)[1])
    wrong_time["requests"][0]["statusMs"] = 11.0
    assert "cancel" in bad(wrong_time, cancelled, device)


def test_reported_cancel_without_a_reason_is_refused():
    device = DeviceProfile()
    trace = trace_of((0, 10, 6, 11))
    _, run = run_of(trace, device)
    plain = trace_of((0, 10, 6, None))
    run["requests"][0].pop("cancelMs")
    found = bad(run, plain, device)
    assert "no step end passes its deadline" in found["status"], found


# -- elsewhere ---------------------------------------------------------------------------------


def test_fast_path_and_compact_format_leave_cancels_to_the_lab_engine():
    unit = load_unit("unit08")
    device = DeviceProfile(kv_pages=64)
    trace = trace_of((0, 10, 6, 11))
    assert not fastpath.covers(unit, "paged", trace, device)
    assert fastpath.reference_run(unit, "paged", {"budget": 64}, trace, device, "full") is None
    _, run = run_of(trace, device)
    assert uses_lifecycle(run)
    _, plain = run_of(trace_of((0, 10, 6, None)), device)
    assert not uses_lifecycle(plain)


rows = st.lists(
    st.tuples(
        st.integers(0, 40).map(lambda q: q / 2),
        st.integers(1, 24),
        st.integers(1, 8),
        st.one_of(st.none(), st.integers(1, 80).map(lambda q: q / 2)),
    ),
    min_size=1,
    max_size=8,
)
small_devices = st.builds(
    lambda k, m, page: DeviceProfile(max_active=k, kv_pages=m, page_tokens=page),
    st.one_of(st.none(), st.integers(1, 4)),
    st.one_of(st.none(), st.integers(4, 24)),
    st.sampled_from([2, 4, 16]),
)


@settings(max_examples=150, deadline=None)
@given(rows=rows, device=small_devices, seed=st.integers(0, 10**6), budget=st.integers(2, 40))
def test_random_traces_with_cancels_keep_every_invariant_and_replay_clean(
    rows, device, seed, budget
):
    trace = trace_of(*rows)
    pages = []
    policy = random_policy(seed)

    def checked(view):
        recount = Tally.of(device, [*view.waiting, *view.running])
        pages.append((view.active, view.pages_held) == (recount.active, recount.pages))
        for seq in view.live.values():
            assert seq.status is None
        return policy(view)

    timeline, run = run_of(trace, device, checked, budget=budget)
    assert all(pages)
    for seq, req in zip(timeline.sequences, trace.requests, strict=True):
        if seq.status is Status.CANCELLED:
            due = req.arrival_ms + (req.cancel_ms or 0)
            assert req.cancel_ms is not None
            assert seq.status_ms >= due and all(t <= seq.status_ms for t in seq.token_times_ms)
            assert not any(
                seq.id in (*e.batch.ids, *e.batch.preempt)
                for e in timeline.events
                if e.start_ms >= seq.status_ms
            )
        elif seq.status is Status.COMPLETED and req.cancel_ms is not None:
            assert seq.status_ms <= req.arrival_ms + req.cancel_ms or any(
                e.start_ms < req.arrival_ms + req.cancel_ms <= e.end_ms == seq.status_ms
                for e in timeline.events
            )
    problems, replay = replay_run(run, trace, device.to_json())
    assert problems == []
    assert replay.token_times == {s.id: s.token_times_ms for s in timeline.sequences}
