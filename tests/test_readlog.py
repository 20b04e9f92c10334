"""A served stream's logged reads (``readsMs``, ``servesim/readlog.py``) drive unit 09's
output-buffer rules as a read rate does: a full buffer pauses the stream, the read that brings
it down to the low mark resumes it, a pause past its deadline stalls it; the grader's replay
asks the same functions and refutes a run file that disagrees with the log."""

from __future__ import annotations

import pytest
from servesim import DeviceProfile, TraceError, parse_trace
from streamcases import entry, reasons, run_of

# one-token prompts, 1 ms steps: request S0's k-th token (and event) enters at k ms
DEVICE = DeviceProfile(
    prefill_ms_per_token=1.0,
    decode_batch_ms=1.0,
    overhead_ms=0.0,
    stream_buffer_bytes=256,  # four 64-byte events
    stream_event_bytes=64,
    stream_low_mark_bytes=128,  # two
    stream_pause_deadline_ms=100.0,
)


def logged(reads, out=8, **extra):
    req = {"id": "S0", "arrivalMs": 0, "inputTokens": 1, "outputTokens": out, "readsMs": reads}
    return parse_trace({"name": "logged", "requests": [{**req, **extra}]})


def test_reads_ms_is_a_checked_trace_field():
    assert logged([1, 2.5]).requests[0].reads_ms == (1.0, 2.5)
    assert logged([]).requests[0].reads_ms == ()  # a client that read nothing yet
    for bad, said in (
        ([2, 1], "in order"),
        ([-1], ">= 0"),
        (["1"], "item 0"),
        ([float("nan")], "item 0"),
        (list(range(9)), "more than outputTokens"),
        (5, "must be a list"),
    ):
        with pytest.raises(TraceError, match="readsMs") as caught:
            logged(bad)
        assert said in str(caught.value)
    with pytest.raises(TraceError, match="exclude each other"):
        logged([1], readBytesPerS=100)


def test_a_full_buffer_pauses_until_the_read_that_reaches_the_low_mark():
    # events at 1..4 ms fill the buffer (4 x 64 = 256 bytes: no room for a fifth): paused at 4;
    # the second read (at 20 ms) leaves 2 events, the low mark: resumed there, the device idle
    reads = [10, 20, 21, 22, 23, 24, 25, 30]
    timeline, run = run_of(logged(reads), DEVICE)
    record = entry(run)
    assert record["pausedMs"] == [[4.0, 20.0]]
    assert record["tokenTimesMs"][:5] == [1.0, 2.0, 3.0, 4.0, 21.0]
    assert record["status"] == "completed" and record["ackMs"] == 30.0
    assert record["bufferPeakBytes"] == 256 and record["readsMs"] == reads
    assert reasons(run, timeline.trace, DEVICE) == {}


def test_a_reader_that_stops_is_cancelled_as_stalled_at_its_pause_deadline():
    timeline, run = run_of(logged([10]), DEVICE)  # one read: 3 events stay, above the mark
    record = entry(run)
    assert record["pausedMs"] == [[4.0, None]]
    assert record["status"] == "cancelled" and record["cancelReason"] == "stalled"
    assert record["statusMs"] == 104.0 and record["ackMs"] is None
    assert run["events"][-1]["endMs"] == 4.0
    assert reasons(run, timeline.trace, DEVICE) == {}


def test_a_completed_stream_whose_last_event_was_never_read_is_not_acknowledged():
    timeline, run = run_of(logged([1, 2, 3], out=3), DEVICE)
    assert entry(run)["ackMs"] == 3.0
    timeline, run = run_of(logged([1, 2], out=3), DEVICE)
    assert entry(run)["status"] == "completed" and entry(run)["ackMs"] is None
    assert reasons(run, timeline.trace, DEVICE) == {}


def test_the_replay_refutes_records_that_disagree_with_the_log():
    trace = logged([10, 20, 21, 22, 23, 24, 25, 30])
    forgeries = {  # each alone: the replay names a request's first wrong record
        "resumed above low mark": ("pausedMs", [[4.0, 10.0]]),  # 3 events left after 1 read
        "ack time": ("ackMs", 25.0),
        "buffer peak": ("bufferPeakBytes", 192),
    }
    for reason, (field, forged) in forgeries.items():
        _, run = run_of(trace, DEVICE)
        entry(run)[field] = forged
        found = reasons(run, trace, DEVICE)
        assert reason in found, (field, found)
        if reason == "resumed above low mark":
            assert "192 bytes" in found[reason]
    # the same schedule against a log whose client never read: a stall, not a resume
    _, run = run_of(trace, DEVICE)
    assert "decode while paused" in reasons(run, logged([10]), DEVICE)
