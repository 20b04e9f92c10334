"""The replay of streamed output (unit 09): honest runs replay clean (random traces with mixed
read rates, page pools, pause deadlines and client cancels), and a forged run file is refused
with the named reason of the rule it breaks."""

from __future__ import annotations

import copy
import dataclasses
import random

import pytest
from servesim import DeviceProfile, Status, parse_trace
from streamcases import EXAMPLE, KIB, READ, entry, reasons, run_of, stream_trace


@pytest.mark.parametrize("seed", range(12))
def test_random_streaming_runs_replay_clean(seed):
    """Engine and replay agree on random traces: mixed read rates, pages, deadlines, cancels."""
    rng = random.Random(seed)
    device = DeviceProfile(
        prefill_ms_per_token=rng.choice([0.5, 1.0]),
        decode_batch_ms=rng.choice([5.0, 20.0]),
        overhead_ms=0.25,
        kv_pages=rng.choice([None, 24, 40]),
        page_tokens=8,
        stream_buffer_bytes=rng.choice([2048, 4096]),
        stream_event_bytes=rng.choice([128, 256]),
        stream_low_mark_bytes=rng.choice([0, 512, 1024]),
        stream_pause_deadline_ms=rng.choice([None, 150.0, 600.0]),
    )
    rows = []
    for _ in range(rng.randint(3, 8)):
        rate = rng.choice([None, 2000.0, 5000.0, 20000.0])
        row = (round(rng.uniform(0, 300), 2), rng.randint(5, 80), rate)
        rows.append(row + ((rng.uniform(50, 900),) if rng.random() < 0.25 else ()))
    reqs = [
        {"id": f"S{i}", "arrivalMs": a, "inputTokens": rng.randint(1, 40), "outputTokens": o}
        | ({"readBytesPerS": r} if r else {})
        | ({"cancelMs": c[0]} if c else {})
        for i, (a, o, r, *c) in enumerate(rows)
    ]
    trace = parse_trace({"requests": reqs})
    timeline, run = run_of(trace, device)
    assert reasons(run, trace, device) == {}
    for seq in timeline.sequences:
        if seq.status is Status.CANCELLED:
            assert entry(run, seq.id)["ackMs"] is None


# -- the replay's named reasons for forged runs -------------------------------------------------


@pytest.fixture(scope="module")
def example_run():
    trace = stream_trace((0, 300, READ))
    return trace, run_of(trace, EXAMPLE)[1]


def test_replay_decode_while_paused(example_run):
    trace, _ = example_run
    roomy = dataclasses.replace(EXAMPLE, stream_buffer_bytes=1024 * KIB)  # never pauses
    _, forged = run_of(trace, roomy)
    found = reasons(forged, trace, EXAMPLE)  # claimed for the 64 KiB buffer of the case
    assert "decode while paused" in found and "at 7968.75 ms (decode [S0]): 'S0' is paused" in str(
        found
    )


def test_replay_pause_not_recorded(example_run):
    trace, run = example_run
    forged = copy.deepcopy(run)
    entry(forged)["pausedMs"] = []
    assert "pause not recorded" in reasons(forged, trace, EXAMPLE)


def test_replay_resumed_above_low_mark(example_run):
    trace, run = example_run
    forged = copy.deepcopy(run)
    entry(forged)["pausedMs"] = [[7968.75, 10000.0]]
    found = reasons(forged, trace, EXAMPLE)
    assert "resumed above low mark" in found and "15937.50" in found["resumed above low mark"]


def test_replay_stalled_stream_not_cancelled(example_run):
    trace, run = example_run  # made without a pause deadline
    strict = dataclasses.replace(EXAMPLE, stream_pause_deadline_ms=5000.0)
    found = reasons(run, trace, strict)
    assert "stalled stream not cancelled" in found
    assert "12968.75" in found["stalled stream not cancelled"]


def test_replay_ack_time(example_run):
    trace, run = example_run
    forged = copy.deepcopy(run)
    entry(forged)["ackMs"] = entry(forged)["finishMs"]  # called read when the last one left
    assert "ack time" in reasons(forged, trace, EXAMPLE)


def test_replay_stream_called_complete_with_unread_events():
    device = dataclasses.replace(EXAMPLE, stream_pause_deadline_ms=5000.0)
    trace = stream_trace((0, 300, READ))
    _, run = run_of(trace, device)
    forged = copy.deepcopy(run)
    entry(forged)["ackMs"] = 30000.0
    assert "stream called complete with unread events" in reasons(forged, trace, device)


def test_replay_buffer_peak_and_cancel_reason(example_run):
    trace, run = example_run
    forged = copy.deepcopy(run)
    entry(forged)["bufferPeakBytes"] = 1000
    assert "buffer peak" in reasons(forged, trace, EXAMPLE)
    device = dataclasses.replace(EXAMPLE, stream_pause_deadline_ms=5000.0)
    _, stalled = run_of(trace, device)
    entry(stalled)["cancelReason"] = "client"
    assert "stalled stream not cancelled" in reasons(stalled, trace, device)


def test_streaming_run_files_keep_the_published_schema():
    """The stream records and the trace's read rates are fields of unit 08's run schema (the
    schema unit 09 will copy); a record of the wrong shape is refused."""
    from servesim.runfile import build_document

    from grader.units import load_unit
    from grader.verify.runschema import validate_run_file

    unit = load_unit("unit08")
    device = dataclasses.replace(EXAMPLE, stream_pause_deadline_ms=5000.0)
    trace = stream_trace((0, 300, READ), (0, 40, None))
    _, run = run_of(trace, device)
    run["limits"] = {"budget": None, "queueCap": None}
    doc = build_document(trace, [run])
    assert validate_run_file(unit, doc) is None
    for field, value in (("pausedMs", [[1.0]]), ("cancelReason", "bored"), ("ackMs", "soon")):
        bad = copy.deepcopy(doc)
        entry(bad["runs"][0])[field] = value
        assert validate_run_file(unit, bad) is not None, field


def test_a_paused_stream_preempted_and_recomputed_replays_clean():
    """A policy may free a paused stream's pages (preempt it); it is recomputed after it
    resumes, and the token its recompute emits enters its buffer like any other."""
    from servesim import Batch
    from stream_policies import backpressure

    freed = []

    def freeing(view):
        victims = [s.id for s in view.paused if s.holds_kv]
        if victims:
            freed.extend(victims)
            batch = backpressure(view)
            if isinstance(batch, Batch) and (batch.decode or batch.prefill):
                return Batch(batch.decode, batch.prefill, preempt=[*batch.preempt, *victims])
        return backpressure(view)

    trace = stream_trace((0, 300, READ), (0, 700, None))
    timeline, run = run_of(trace, EXAMPLE, freeing)
    slow = timeline.sequences[0]
    assert freed and slow.recomputes == 1 and slow.status is Status.COMPLETED
    assert len(entry(run)["pausedMs"]) >= 1 and entry(run)["ackMs"] is not None
    assert reasons(run, trace, EXAMPLE) == {}
