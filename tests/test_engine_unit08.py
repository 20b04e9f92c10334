"""The engine's unit 08 rules on small hand-checked cases: KV pages (the chapter's check),
preemption by recompute, rejection at arrival, deadlines, the token budget, closed loops."""

from __future__ import annotations

import pytest
from servesim import (
    Batch,
    ClosedLoop,
    DeviceProfile,
    PolicyError,
    PrefillChunk,
    Status,
    Wait,
    parse_trace,
    rules,
    simulate,
)
from servesim.runfile import build_run


def trace_of(*rows, **extra):
    """Requests (id, arrivalMs, inputTokens, outputTokens[, fields]) as a parsed trace."""
    reqs = []
    for rid, arrival, n_in, n_out, *more in rows:
        reqs.append(
            {"id": rid, "arrivalMs": arrival, "inputTokens": n_in, "outputTokens": n_out}
            | (more[0] if more else {})
        )
    return parse_trace({"name": "t", "requests": reqs, **extra})


def fifo(view):
    """Decode everything running, then whole prompts in queue order while they fit."""
    batch = Batch(decode=[s.id for s in view.running])
    for seq in view.waiting:
        bigger = Batch(batch.decode, (*batch.prefill, PrefillChunk(seq.id, seq.remaining_prefill)))
        if not view.fits(bigger):
            break
        batch = bigger
    return batch


def test_chapter_kv_page_check():
    """257/255 hold 33 pages; one decode each and a 256-token chunk: 49; declaring 1,024
    positions for the chunk's request needs 64 more: 97 > 64; two more tokens each: 34."""
    device = DeviceProfile(kv_pages=64, page_tokens=16)
    trace = trace_of(("A", 0, 257, 4), ("B", 0, 255, 4), ("C", 0, 256, 2, {"maxOutputTokens": 768}))
    seen = []

    def policy(view):
        seen.append((view.pages_held, view.pages_reserved, view.active))
        step = len(seen)
        if step == 1:
            return Batch(prefill=[PrefillChunk("A", 257), PrefillChunk("B", 255)])
        if step == 2:
            c = view.sequence("C")
            needed = view.pages_held + device.pages_for(c.reservation_tokens)
            assert needed == 97 and needed > device.kv_pages
            return Batch(decode=["A", "B"], prefill=[PrefillChunk("C", 256)])
        return Batch(decode=[s.id for s in view.running])

    simulate(trace, policy, device)
    assert seen[1][0] == 33  # 17 + 16
    assert seen[2][0] == 17 + 16 + 16 == 49  # 258, 256 and C's 256
    after_two_each = device.pages_for(257 + 2) + device.pages_for(255 + 2)
    assert after_two_each == 34


def test_occupancy_rule_counts_only_page_boundaries():
    device = DeviceProfile(kv_pages=64, page_tokens=16)
    start = rules.Occupancy(2, 33)
    assert rules.occupancy_after(device, start, [], [(257, 1), (255, 1)]) == start
    assert rules.occupancy_after(device, start, [], [(257, 1), (255, 1), (0, 256)]).pages == 49
    assert rules.occupancy_after(device, start, [257], []) == rules.Occupancy(1, 16)


def preempting(at_step: int, victims: list[str]):
    """``fifo``, except that at step ``at_step`` it preempts ``victims`` and only decodes."""
    count = {"n": 0}

    def policy(view):
        count["n"] += 1
        if count["n"] == at_step:
            keep = [s.id for s in view.running if s.id not in victims]
            if keep:
                return Batch(decode=keep, preempt=victims)
            head = next(s for s in view.waiting if s.id not in victims)
            return Batch(prefill=[PrefillChunk(head.id, 1)], preempt=victims)
        return fifo(view)

    return policy


def test_preempted_sequence_recomputes_prompt_and_emitted_tokens():
    trace = trace_of(("A", 0, 4, 5), ("B", 0, 3, 3))
    device = DeviceProfile(overhead_ms=0.0)
    plain = simulate(trace, fifo, device)
    timeline = simulate(trace, preempting(3, ["A"]), device)
    a = timeline.sequences[0]
    assert a.recomputes == 1 and a.status is Status.COMPLETED
    # A: prefill 4 (token 1 at 7 ms), decode (token 2 at 8); preempted at step 3 with 2 emitted
    # and 4 + 1 positions cached: it recomputes 4 + 2 positions and that step emits token 3
    assert a.recomputed_tokens == 5
    recompute = next(e for e in timeline.events if e.batch.prefill and e.index > 2)
    assert recompute.batch.prefill == (PrefillChunk("A", 6),) and recompute.prefill_from == (0,)
    assert a.token_times_ms[2] == recompute.end_ms
    assert len(a.token_times_ms) == 5 == len(set(a.token_times_ms))
    assert a.token_times_ms[:2] == plain.sequences[0].token_times_ms[:2]


def test_preempted_sequences_go_to_the_front_of_the_queue_the_last_named_first():
    """vLLM's ``prepend_request``: each victim goes to the very front in turn, ahead of the
    partial prefill, the earlier victims and the requests that never started."""
    trace = trace_of(("A", 0, 2, 9), ("B", 0, 2, 9), ("P", 0, 8, 2), ("N", 0, 3, 2))
    orders = []

    def policy(view):
        orders.append([s.id for s in view.waiting])
        step = len(orders)
        if step == 1:
            return Batch(prefill=[PrefillChunk("A", 2), PrefillChunk("B", 2)])
        if step == 2:  # P starts a partial prefill
            return Batch(decode=["A", "B"], prefill=[PrefillChunk("P", 3)])
        if step == 3:
            return Batch(prefill=[PrefillChunk("P", 1)], preempt=["B", "A"])
        return fifo(view)

    timeline = simulate(trace, policy, DeviceProfile())
    assert orders[3] == ["A", "B", "P", "N"]
    seqs = {s.id: s for s in timeline.sequences}
    # current prefills in the order they began: P (step 2), then A and B recomputed, then N
    assert sorted(seqs, key=lambda rid: seqs[rid].prefill_start) == ["P", "A", "B", "N"]
    assert seqs["P"].prefill_start_ms == timeline.events[1].start_ms


def test_a_later_preemption_goes_ahead_of_earlier_victims():
    trace = trace_of(("A", 0, 2, 9), ("B", 0, 2, 9), ("F", 0, 6, 2), ("N", 0, 2, 2))
    orders = []

    def policy(view):
        orders.append([s.id for s in view.waiting])
        step = len(orders)
        if step == 1:
            return Batch(prefill=[PrefillChunk("A", 2), PrefillChunk("B", 2)])
        if step == 2:
            return Batch(decode=["B"], prefill=[PrefillChunk("F", 3)], preempt=["A"])
        if step == 3:
            return Batch(prefill=[PrefillChunk("F", 3)], preempt=["B"])
        return fifo(view)

    simulate(trace, policy, DeviceProfile())
    assert orders[2] == ["A", "F", "N"]  # the victim stands ahead of the partial prefill F
    assert orders[3] == ["B", "A", "N"]  # F finished its prefill; B went ahead of A


def test_holders_are_in_readmission_order():
    """``view.holders``: running requests and partial prefills, by when the current prefill
    began; a recomputed request counts from its restart."""
    trace = trace_of(("A", 0, 2, 9), ("B", 0, 2, 9), ("P", 0, 8, 2))
    seen = []

    def policy(view):
        seen.append([s.id for s in view.holders])
        step = len(seen)
        if step == 1:
            return Batch(prefill=[PrefillChunk("A", 2), PrefillChunk("B", 2)])
        if step == 2:
            return Batch(decode=["B"], preempt=["A"])
        if step == 3:
            return Batch(decode=["B"], prefill=[PrefillChunk("A", 3), PrefillChunk("P", 2)])
        return fifo(view)

    simulate(trace, policy, DeviceProfile())
    assert seen[1] == ["A", "B"]
    assert seen[2] == ["B"]
    assert seen[3] == ["B", "A", "P"]  # A's recompute began before P's prefill, same step


def test_rejections_at_arrival_stay_in_the_run():
    device = DeviceProfile(kv_pages=4, page_tokens=4)  # 16 positions
    trace = trace_of(
        ("big", 0, 10, 4, {"maxOutputTokens": 7}),  # 17 positions: never fits
        ("a", 0, 4, 2),
        ("b", 0, 4, 2),
        ("c", 0, 4, 2),
        ("d", 1, 4, 2),  # arrives when a and b have started: the queue has room
    )
    refused = []

    def admit(seq, view):
        refused.append(seq.id)
        return seq.id != "d"

    timeline = simulate(trace, fifo, device, queue_cap=2, admit=admit)
    status = {s.id: s.status.value for s in timeline.sequences}
    assert status == {
        "big": "rejected",
        "a": "completed",
        "b": "completed",
        "c": "rejected",  # two never-started requests already wait
        "d": "rejected",  # refused by admit()
    }
    assert refused == ["a", "b", "d"]  # admit() is asked only after the engine's own rules
    run = build_run("fifo", {}, device, timeline, None, extended=True, limits={"queueCap": 2})
    assert [r["status"] for r in run["requests"]] == list(status.values())
    assert run["summary"]["rejected"] == 3 and run["summary"]["completed"] == 2
    assert run["requests"][0]["ttftMs"] is None and run["requests"][0]["tokenTimesMs"] == []


def test_deadline_cancels_at_the_step_end_and_releases_kv():
    device = DeviceProfile(overhead_ms=0.0, kv_pages=8, page_tokens=2)
    trace = trace_of(
        ("L", 0, 6, 2),
        ("S", 0, 4, 2, {"deadlineMs": 6}),  # needs its first token by 6 ms
        ("T", 0, 2, 1, {"deadlineMs": 8}),  # a step ending at 8 ms is not after its deadline
    )
    held = []

    def policy(view):
        held.append((view.now_ms, view.active, view.pages_held))
        if view.now_ms == 0:  # L whole, 2 of S's 4 prompt tokens: ends at 8 ms
            return Batch(prefill=[PrefillChunk("L", 6), PrefillChunk("S", 2)])
        return fifo(view)

    timeline = simulate(trace, policy, device)
    s = {seq.id: seq for seq in timeline.sequences}
    assert s["S"].status is Status.CANCELLED and s["S"].status_ms == 8.0
    assert s["S"].token_times_ms == []
    assert held[1] == (8.0, 1, 3)  # only L's 6 positions remain: S's page went back
    # T survives the boundary at 8 ms; the step ending at 11 ms gives its first token
    assert s["T"].status is Status.COMPLETED and s["T"].token_times_ms == [11.0]


def test_token_budget_is_checked_by_the_engine():
    trace = trace_of(("A", 0, 5, 2))
    with pytest.raises(PolicyError, match="5 new positions, token budget 4"):
        simulate(trace, lambda v: Batch(prefill=[PrefillChunk("A", 5)]), DeviceProfile(), budget=4)


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        (Batch(preempt=["A"]), "empty batch"),
        (Batch(prefill=[PrefillChunk("A", 1)], preempt=["A"]), "appears twice"),
        (Batch(prefill=[PrefillChunk("A", 1)], preempt=["B"]), "preempt of 'B'.*holds no KV"),
    ],
)
def test_bad_preemptions_are_rejected_with_a_reason(batch, message):
    trace = trace_of(("A", 0, 2, 2), ("B", 0, 2, 2))
    with pytest.raises(PolicyError, match=message):
        simulate(trace, lambda view: batch, DeviceProfile())


def test_closed_loop_arrivals_follow_completions():
    sizes = trace_of(("x", 0, 3, 2), ("y", 0, 5, 3))
    closed = ClosedLoop(users=2, think_ms=10.0, requests=7, sizes=sizes, seed=3)
    timeline = simulate(None, fifo, DeviceProfile(), closed=closed)
    seqs = timeline.sequences
    assert len(seqs) == 7 and all(s.status is Status.COMPLETED for s in seqs)
    assert [s.arrival_ms for s in seqs[:2]] == [10.0, 10.0]  # each user thinks first
    finishes = sorted(s.token_times_ms[-1] for s in seqs)
    # every later request arrives one think time after some earlier request finished
    for seq in seqs[2:]:
        assert any(abs(seq.arrival_ms - (f + 10.0)) < 1e-9 for f in finishes)
    again = simulate(None, fifo, DeviceProfile(), closed=closed)
    assert [(s.id, s.arrival_ms, s.input_tokens) for s in again.sequences] == [
        (s.id, s.arrival_ms, s.input_tokens) for s in seqs
    ]
    assert parse_trace(timeline.trace.raw).requests == timeline.trace.requests


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("maxOutputTokens", 1, "'maxOutputTokens' must be an integer >= outputTokens \\(2\\)"),
        ("deadlineMs", 0, "'deadlineMs' must be a finite number > 0"),
        ("tenant", "", "'tenant' must be a non-empty string"),
    ],
)
def test_unit08_trace_fields_are_validated(field, value, message):
    from servesim import TraceError

    with pytest.raises(TraceError, match=f"request 'A': field {message}"):
        trace_of(("A", 0, 2, 2, {field: value}))


def test_view_queues_behave_like_the_tuples_unit07_policies_saw():
    trace = trace_of(("A", 0, 2, 2), ("B", 0, 3, 2), ("C", 1, 1, 1))
    seen = []

    def policy(view):
        both = view.waiting + view.running
        seen.append(
            (
                [s.id for s in both],
                [s.id for s in view.waiting[1:]],
                view.waiting == tuple(view.waiting),
                len(view.waiting),
                view.waiting[-1].id if view.waiting else None,
            )
        )
        return fifo(view)

    simulate(trace, policy, DeviceProfile())
    assert seen[0] == (["A", "B"], ["B"], True, 2, "B")


def test_wait_idles_until_its_time_or_the_next_arrival():
    trace = trace_of(("a", 0, 10, 1), ("b", 30, 10, 1))
    asked = []

    def policy(view):
        asked.append(view.now_ms)
        return Wait(50.0) if view.now_ms < 50 and not view.running else fifo(view)

    timeline = simulate(trace, policy, DeviceProfile(overhead_ms=0.0))
    first = timeline.events[0]
    assert first.start_ms == 50.0, "the wait ends at its time, not before"
    assert {c.id for c in first.batch.prefill} == {"a", "b"}
    assert asked[:3] == [0, 30, 50], "asked again at b's arrival, before the wait's end"


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), "soon"])
def test_wait_must_be_later_than_now(bad):
    trace = trace_of(("a", 0, 10, 1))
    with pytest.raises(PolicyError, match=r"Wait\(.*\) at 0.00 ms: it must wait until a later"):
        simulate(trace, lambda view: Wait(bad), DeviceProfile())
