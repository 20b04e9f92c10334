"""measure.py, the evidence of exercise 31.12: the p99 rank, recompute amplification without
prefix hits, waiting and queue figures with their window edges, ITL gaps filed by the step that
ended them, and slow-client shares over the requests that streamed."""

import measure
from measurekit import event, request, run


def test_p99_is_the_nearest_rank():
    assert measure.p99(list(range(1, 101))) == 99, "100 values: rank ceil(0.99 x 100) = 99"
    assert measure.p99(list(range(1, 11))) == 10, "10 values: rank ceil(9.9) = 10, the largest"
    assert measure.p99(list(range(101, 0, -1))) == 100, "101 values: rank 100 (sort first)"
    assert measure.p99([7.0]) == 7.0
    assert measure.p99([]) is None


def test_amplification_counts_the_recompute_after_a_preemption():
    """A's 100-token prompt runs, A is preempted after 5 tokens, and its re-prefill runs the
    prompt and the 5 emitted tokens again: 205 executed for 100 new prompt tokens."""
    entry = run(
        [request("A", 0.0, inputs=100)],
        [event(0, 100, prefill=[("A", 0, 100)]), event(200, 305, prefill=[("A", 0, 105)])],
    )
    got = measure.prefill_amplification(entry)
    assert (got.num, got.den) == (205, 100), f"executed / new prompt tokens, got {got}"
    assert got.value == 2.05


def test_amplification_leaves_prefix_hits_out_of_both_counts():
    """B's first 64 positions come from the prefix cache: 36 executed, 36 new; C has no hit."""
    entry = run(
        [request("B", 0.0, inputs=100), request("C", 0.0, inputs=50)],
        [event(0, 40, prefill=[("B", 64, 36, 64), ("C", 0, 50)])],
    )
    got = measure.prefill_amplification(entry)
    assert got.num == 86, "cached positions were not executed: 36 + 50"
    assert got.den == 86, "a prefix hit is not new prompt work either: (100 - 64) + 50"
    assert got.value == 1.0, "no prompt token ran twice"


def test_waiting_share_is_over_the_requests_that_were_prefilled():
    entry = run(
        [
            request("A", 0.0, tokens=[100.0]),  # waits 40 of its 100 ms
            request("B", 10.0, tokens=[60.0]),  # starts on arrival: 0 of 50 ms
            request("R", 20.0, status="rejected"),  # never prefilled
            request("X", 0.0, status="cancelled", end=500.0),  # cancelled while waiting
        ],
        [event(10, 30, prefill=[("B", 0, 20)]), event(40, 60, prefill=[("A", 0, 20)])],
    )
    got = measure.waiting_share(entry)
    assert (got.num, got.den) == (40, 150), (
        f"got {got}: the requests never prefilled have no first step and are not in it"
    )


def test_mean_queue_clips_each_wait_to_the_window():
    """Waits [0, 100), [50, 150) and [200, 260); the window [100, 200] holds 50 ms of them."""
    entry = run(
        [request("X", 0.0), request("Y", 50.0), request("Z", 200.0)],
        [
            event(100, 110, prefill=[("X", 0, 10)]),
            event(150, 160, prefill=[("Y", 0, 10)]),
            event(260, 270, prefill=[("Z", 0, 10)]),
        ],
    )
    assert measure.mean_queue(entry, 100.0, 200.0) == 0.5, (
        "X's wait ends where the window starts, Z's starts where it ends: only 50 ms of Y's"
    )
    assert measure.mean_queue(entry, 0.0, 300.0) == 260 / 300
    assert measure.mean_queue(entry, 200.0, 200.0) == 0.0
    assert measure.queue_steps(entry) == [(0.0, 1), (50.0, 2), (100.0, 1), (150.0, 0),
                                         (200.0, 1), (260.0, 0)]  # fmt: skip


def _two_streams():
    """A decodes from 10 ms; B's 600-token prompt shares the step [20, 50] with A's decode."""
    events = [
        event(0, 10, prefill=[("A", 0, 50)]),
        event(10, 20, decode=["A"]),
        event(20, 50, decode=["A"], prefill=[("B", 0, 600)]),
        event(50, 60, decode=["A", "B"]),
    ]
    return events, [10.0, 20.0, 50.0, 60.0]


def test_itl_gap_belongs_to_the_step_that_ended_it():
    events, times = _two_streams()
    entry = run([request("A", 0.0, tokens=times), request("B", 20.0, tokens=[50.0, 60.0])], events)
    split = measure.itl_split(entry)
    assert split.with_prefill == [30.0], "only the gap ended by the step with B's prefill"
    assert sorted(split.without_prefill) == [10.0, 10.0, 10.0]
    assert split.paused == []


def test_itl_gap_across_a_pause_is_the_buffer_s():
    """A's stream paused during [25, 45]: its gap 20 -> 50 is explained by the pause."""
    events, times = _two_streams()
    paused = request("A", 0.0, tokens=times, pausedMs=[[25.0, 45.0]])
    split = measure.itl_split(run([paused], events))
    assert split.paused == [30.0]
    assert split.with_prefill == [] and split.without_prefill == [10.0, 10.0]
    touching = request("A", 0.0, tokens=times, pausedMs=[[5.0, 10.0]])
    split = measure.itl_split(run([touching], events))
    assert split.paused == [], "a pause that ended at the earlier token overlaps no gap"
    never = request("A", 0.0, tokens=times[:3], status="cancelled", pausedMs=[[45.0, None]])
    split = measure.itl_split(run([never], events))
    assert split.paused == [30.0], "a pause that never ended (end None) covers the gaps after it"


def _streaming_run():
    full = 1000
    return run(
        [
            # 950 bytes in a 1000-byte buffer: the next 64-byte event does not fit, so it is full
            request("a", 0.0, tokens=[5.0, 9.0], bufferPeakBytes=950, pausedMs=[[6.0, 8.0]]),
            request(
                "b",
                0.0,
                tokens=[5.0],
                status="cancelled",
                end=99.0,
                bufferPeakBytes=full,
                pausedMs=[[6.0, 99.0]],
                cancelReason="stalled",
            ),
            request("c", 0.0, tokens=[5.0], status="cancelled", end=7.0, bufferPeakBytes=64),
            request("d", 0.0, tokens=[5.0, 6.0], bufferPeakBytes=128, pausedMs=[]),
            request("e", 0.0, tokens=[5.0, 6.0], bufferPeakBytes=128),
            request("f", 0.0, tokens=[5.0, 6.0], bufferPeakBytes=0),
            request("r1", 1.0, status="rejected"),
            request("r2", 2.0, status="rejected"),
        ],
        streamBufferBytes=full,
        streamEventBytes=64,
    )


def test_slow_client_shares_are_over_the_streamed_requests():
    slow = measure.slow_clients(_streaming_run())
    assert (slow.paused.num, slow.paused.den) == (2, 6), (
        f"got {slow.paused}: 2 paused of the 6 that streamed; the rejected never streamed"
    )
    assert (slow.buffer_full.num, slow.buffer_full.den) == (2, 6), (
        "a buffer is full when it cannot take one more event, not only at its capacity"
    )
    assert (slow.peak_bytes, slow.capacity_bytes) == (1000, 1000)


def test_stalled_counts_only_cancels_at_the_pause_deadline():
    slow = measure.slow_clients(_streaming_run())
    assert (slow.stalled.num, slow.stalled.den) == (1, 6), "c was cancelled, not stalled"


def test_no_streaming_fields_means_no_streaming_evidence():
    entry = _streaming_run()
    del entry["device"]["streamBufferBytes"]
    assert measure.slow_clients(entry) is None
