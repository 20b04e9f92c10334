"""Streaming output (unit 09, exercise 31.10): the settings, the engine's rules (pause at a full
buffer, resume at the low mark, a stalled stream cancelled), the policy's view of them and the
run file's records. The replay's checks are in tests/grader/test_replay_stream.py."""

from __future__ import annotations

import dataclasses
import re

import pytest
from servesim import Batch, DeviceProfile, PrefillChunk, Status, TraceError, parse_trace, simulate
from servesim.engine import PolicyError
from servesim.runfile import uses_lifecycle
from stream_policies import backpressure
from streamcases import EXAMPLE, KIB, READ, STEP_MS, counted, entry, reasons, run_of, stream_trace

from grader import fastpath
from grader.units import load_unit

# -- settings -----------------------------------------------------------------------------------


def test_read_rate_is_an_optional_checked_trace_field():
    trace = stream_trace((0, 3, 4096))
    assert trace.requests[0].read_bytes_per_s == 4096.0
    assert stream_trace((0, 3, None)).requests[0].read_bytes_per_s is None
    for bad in (0, -1, "4096", True, float("inf")):
        with pytest.raises(TraceError, match="readBytesPerS"):
            stream_trace((0, 3, bad))
    with pytest.raises(TraceError, match="did you mean 'readBytesPerS'"):
        parse_trace(
            {"requests": [{"id": "a", "arrivalMs": 0, "inputTokens": 1, "outputTokens": 1,
                           "readBytesPerSec": 5}]}
        )  # fmt: skip


def test_device_stream_settings_round_trip_and_are_checked():
    assert "streamBufferBytes" not in DeviceProfile().to_json()  # off: run files unchanged
    assert DeviceProfile().to_json() == DeviceProfile(stream_event_bytes=99).to_json()
    doc = EXAMPLE.to_json()
    assert doc["streamBufferBytes"] == 65536 and doc["streamPauseDeadlineMs"] is None
    assert DeviceProfile.from_json(doc) == EXAMPLE
    for change, field in (
        ({"streamBufferBytes": 0}, "streamBufferBytes"),
        ({"streamEventBytes": 70000}, "streamEventBytes"),
        ({"streamLowMarkBytes": 65536 - 383}, "streamLowMarkBytes"),  # no room at the mark
        ({"streamPauseDeadlineMs": 0}, "streamPauseDeadlineMs"),
        ({"streamLowMarkBytes": 1.5}, "streamLowMarkBytes"),
    ):
        with pytest.raises(ValueError, match=field):
            DeviceProfile.from_json({**doc, **change})


# -- exercise 31.10 on the engine ---------------------------------------------------------------


def test_example_31_10_fills_pauses_and_resumes_at_the_low_mark():
    produce = EXAMPLE.stream_event_bytes * 1000 / STEP_MS
    assert produce == 12 * KIB  # bytes/s into the buffer while the stream decodes
    fill_s = EXAMPLE.stream_buffer_bytes / (produce - READ)
    assert fill_s == 8.0  # the chapter's 64 / (12 - 4)
    policy, calls = counted(backpressure)
    timeline, run = run_of(stream_trace((0, 300, READ)), EXAMPLE, policy)
    (start, end), = entry(run)["pausedMs"]  # fmt: skip
    # tokens come at 31.25 ms, 62.5 ms, ... (production starts at 0); the buffer cannot take
    # the event due at 8.0 s, so the stream pauses at the step end before it
    assert start < fill_s * 1000 == start + STEP_MS and start == 7968.75
    peak, net = entry(run)["bufferPeakBytes"], 384 - READ * STEP_MS / 1000  # 256 B a step
    assert peak + EXAMPLE.stream_event_bytes > EXAMPLE.stream_buffer_bytes  # full now
    assert peak - net + EXAMPLE.stream_event_bytes <= EXAMPLE.stream_buffer_bytes  # not before
    assert end == start + (peak - EXAMPLE.stream_low_mark_bytes) * 1000 / READ == 15937.5
    seq = timeline.sequences[0]
    assert seq.status is Status.COMPLETED and seq.token_times_ms[-1] == 17343.75
    gap = [b - a for a, b in zip(seq.token_times_ms, seq.token_times_ms[1:]) if b - a > STEP_MS]
    assert gap == [end - start + STEP_MS]  # no token while paused, then one step after resume
    # no busy loop: one policy call per step; the paused stretch is one jump of the clock
    assert len(calls) == len(timeline.events) == 300
    level = EXAMPLE.stream_low_mark_bytes + (300 - 255) * (384 - READ * STEP_MS / 1000)
    assert entry(run)["ackMs"] == 17343.75 + level * 1000 / READ
    assert reasons(run, stream_trace((0, 300, READ)), EXAMPLE) == {}


def test_a_deadline_shorter_than_the_drain_cancels_the_stalled_stream():
    device = dataclasses.replace(EXAMPLE, stream_pause_deadline_ms=5000.0)  # drain: 7968.75 ms
    trace = stream_trace((0, 300, READ))
    timeline, run = run_of(trace, device)
    seq = timeline.sequences[0]
    assert seq.status is Status.CANCELLED and seq.status_ms == 7968.75 + 5000
    assert seq.cancel_reason == "stalled" and seq.generated == 255
    assert entry(run)["pausedMs"] == [[7968.75, None]]
    assert entry(run)["ackMs"] is None and entry(run)["cancelReason"] == "stalled"
    assert len(timeline.events) == 255  # the clock jumped to the deadline
    assert reasons(run, trace, device) == {}


def test_a_late_cancel_after_a_stall_does_nothing():
    device = dataclasses.replace(EXAMPLE, stream_pause_deadline_ms=5000.0)
    _, stalled = run_of(stream_trace((0, 300, READ)), device)
    trace = stream_trace((0, 300, READ, 14000.0))
    timeline, late = run_of(trace, device)
    assert timeline.sequences[0].cancel_reason == "stalled"
    assert {k: v for k, v in entry(late).items() if k != "cancelMs"} == entry(stalled)
    assert late["events"] == stalled["events"]
    assert reasons(late, trace, device) == {}


def test_a_client_cancel_while_paused_ends_the_pause_at_its_time():
    trace = stream_trace((0, 300, READ, 10000.0))
    timeline, run = run_of(trace, EXAMPLE)
    seq = timeline.sequences[0]
    assert (seq.status_ms, seq.cancel_reason) == (10000.0, "client")  # the clock stopped there
    assert entry(run)["pausedMs"] == [[7968.75, None]] and entry(run)["ackMs"] is None
    assert reasons(run, trace, EXAMPLE) == {}


def test_a_paused_stream_keeps_its_pages_and_others_run():
    device = dataclasses.replace(EXAMPLE, kv_pages=64, page_tokens=16)
    seen = []

    def watching(view):
        if view.paused:
            (s,) = view.paused
            seen.append((s.id, s.paused, s.holds_kv, view.pages_held, view.buffer_bytes(s)))
        return backpressure(view)

    trace = stream_trace((0, 300, READ), (0, 600, None))
    timeline, run = run_of(trace, device, watching)
    assert seen and {row[:3] for row in seen} == {("S0", True, True)}
    slow = timeline.sequences[0]
    held = device.pages_for(255)  # S0's cache while paused: 1 prompt token + 254 decodes
    assert all(pages >= held + 1 for *_, pages, _ in seen)
    levels = [level for *_, level in seen]
    assert levels == sorted(levels, reverse=True)  # it drains and nothing enters
    assert levels[0] <= 64 * KIB and levels[-1] > device.stream_low_mark_bytes
    assert slow.status is Status.COMPLETED and entry(run, "S1")["pausedMs"] == []
    assert entry(run, "S1")["ackMs"] == entry(run, "S1")["finishMs"]  # read at once
    assert reasons(run, trace, device) == {}


def test_a_batch_that_decodes_a_paused_stream_is_refused_in_one_sentence():
    def decode_all(view):
        ids = [s.id for s in view.running]
        return Batch(decode=ids, prefill=[PrefillChunk(s.id, 1) for s in view.waiting])

    trace = stream_trace((0, 300, READ), (0, 600, None))  # S1 keeps the policy asked
    with pytest.raises(PolicyError) as info:
        simulate(trace, decode_all, EXAMPLE, name="decode_all")
    message = str(info.value)
    assert re.match(r"batch at [0-9.]+ ms: 'S0' is paused: its output buffer holds", message)
    assert "may not be decoded or prefilled until it drains to the low mark" in message


def test_view_fits_says_no_for_a_paused_stream():
    verdicts = []

    def asking(view):
        if view.paused:
            verdicts.append(view.fits(Batch(decode=[view.paused[0].id])))
        return backpressure(view)

    device = dataclasses.replace(EXAMPLE, kv_pages=64)
    run_of(stream_trace((0, 300, READ), (0, 600, None)), device, asking)
    assert verdicts and not any(verdicts)


def test_streaming_without_read_rates_pauses_nothing_and_unit08_paged_still_runs():
    solutions = pytest.importorskip("solutions.unit08.policies")
    trace = stream_trace((0, 30, None), (5, 20, None))
    _, run = run_of(trace, EXAMPLE, lambda view: solutions.paged(view, 512))
    assert all(not r["pausedMs"] and r["bufferPeakBytes"] == 0 for r in run["requests"])
    assert [r["ackMs"] for r in run["requests"]] == [r["finishMs"] for r in run["requests"]]
    with pytest.raises(PolicyError, match="'S0' is paused"):
        simulate(
            stream_trace((0, 300, READ), (0, 600, None)),
            lambda view: solutions.paged(view, 512),
            EXAMPLE,
        )


def test_streaming_off_adds_nothing_to_the_run_file():
    plain = dataclasses.replace(EXAMPLE, stream_buffer_bytes=None)
    timeline, run = run_of(stream_trace((0, 300, READ)), plain)
    assert timeline.streams is None and not timeline.sequences[0].paused
    assert not {"ackMs", "pausedMs", "bufferPeakBytes", "cancelReason"} & set(entry(run))
    assert "streamBufferBytes" not in run["device"]


def test_fast_path_and_compact_format_leave_streaming_to_the_lab_engine():
    unit = load_unit("unit08")
    trace = parse_trace(
        {"requests": [{"id": "a", "arrivalMs": 0, "inputTokens": 4, "outputTokens": 2}]}
    )
    assert not fastpath.covers(unit, "continuous", trace, EXAMPLE)
    _, run = run_of(trace, EXAMPLE)
    assert uses_lifecycle(run)


def test_no_busy_loop_with_many_paused_streams():
    device = dataclasses.replace(EXAMPLE, stream_pause_deadline_ms=3000.0)
    rows = [(i * 100.0, 400, 1000.0 + 500 * i) for i in range(6)]
    policy, calls = counted(backpressure)
    timeline, run = run_of(stream_trace(*rows), device, policy)
    tokens = sum(s.generated for s in timeline.sequences)
    assert len(timeline.events) <= tokens and len(calls) <= len(timeline.events) + 6
    assert reasons(run, stream_trace(*rows), device) == {}


def test_ex31_10_prints_the_runs_figures(capsys):
    """starter/unit09/ex31_10.py (standard library and the engine only) runs the example and
    prints what its runs give, beside the chapter's closed form."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "starter" / "unit09" / "ex31_10.py"
    spec = importlib.util.spec_from_file_location("ex31_10", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    figures = module.figures()
    free, stall = figures["no_deadline"], figures["with_deadline"]
    assert figures["fill_s"] == 8.0 and free["pauses_ms"] == [[7968.75, 15937.5]]
    assert (stall["status"], stall["cancel_reason"], stall["tokens"]) == (
        "cancelled",
        "stalled",
        255,
    )
    assert stall["ack_ms"] is None and free["steps"] == 300
    assert module.main([]) == 0
    out = capsys.readouterr().out
    assert "= 8 s" in out and "paused at 7.969 s" in out and "resumed at 15.938 s" in out
    assert "cancelled (stalled) at 12.969 s after 255 of 300 tokens" in out


def test_a_policy_that_writes_an_output_buffer_is_stopped():
    def meddling(view):
        for seq in view.paused:
            view.streams.paused[seq.id].resume_at = view.now_ms  # resume it early
        return backpressure(view)

    trace = stream_trace((0, 300, READ), (0, 600, None))
    with pytest.raises(PolicyError, match="resume_at of the output buffer of request 'S0'"):
        simulate(trace, meddling, EXAMPLE, name="meddling")

    def clearing(view):
        if view.paused:
            view.streams.paused.clear()
        return backpressure(view)

    with pytest.raises(PolicyError, match="changed its view"):
        simulate(trace, clearing, EXAMPLE, name="clearing")
