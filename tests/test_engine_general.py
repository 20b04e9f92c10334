"""The engine beyond unit 07's policies: mixed batches, batch-size cost, caps, bad batches."""

import pytest
from servesim import Batch, DeviceProfile, PolicyError, PrefillChunk, parse_trace, simulate

TWO = parse_trace(
    {
        "name": "two",
        "requests": [
            {"id": "A", "arrivalMs": 0, "inputTokens": 2, "outputTokens": 3},
            {"id": "B", "arrivalMs": 0, "inputTokens": 4, "outputTokens": 2},
        ],
    }
)


def mixed_batches(view):
    """SARATHI-style: decode everything running and prefill up to 2 tokens in the same batch."""
    prefill = ()
    if view.waiting:
        head = view.waiting[0]
        prefill = (PrefillChunk(head.id, min(2, head.remaining_prefill)),)
    return Batch(decode=[s.id for s in view.running], prefill=prefill)


def test_mixed_batch_costs_decode_plus_prefill():
    device = DeviceProfile(decode_ms_per_seq=0.5)
    timeline = simulate(TWO, mixed_batches, device)
    spans = [(e.start_ms, e.end_ms, e.batch.decode, e.batch.prefill) for e in timeline.events]
    # A: 2 prefill tokens (2.25); then decode A + 2 of B: 0.25 + 1 + 0.5 + 2 = 3.75.
    assert spans[0] == (0.0, 2.25, (), (PrefillChunk("A", 2),))
    assert spans[1] == (2.25, 6.0, ("A",), (PrefillChunk("B", 2),))
    assert spans[2][3] == (PrefillChunk("B", 2),) and spans[2][2] == ("A",)
    seqs = {s.id: s for s in timeline.sequences}
    assert seqs["B"].token_times_ms[0] == spans[2][1]  # first token with its last prefill token
    assert all(len(s.token_times_ms) == s.output_tokens for s in timeline.sequences)


def test_active_cap_rejects_a_batch_that_exceeds_it():
    with pytest.raises(PolicyError, match="2 active sequences, cap 1"):
        simulate(TWO, mixed_batches, DeviceProfile(max_active=1))


def test_kv_page_budget_rejects_a_batch_that_exceeds_it():
    # Pages of 2 tokens; each request fits alone (A 2 + 3 = 5 tokens, 3 pages; B 6, 3 pages).
    # At 5.50 ms A holds 3 positions and its decode writes a fourth (2 pages); B holds 2 prompt
    # tokens and its next chunk brings it to 4 (2 pages): 4 pages in a pool of 3.
    with pytest.raises(PolicyError, match=r"at 5\.50 ms: needs 4 KV pages, budget 3"):
        simulate(TWO, mixed_batches, DeviceProfile(kv_pages=3, page_tokens=2))
    assert simulate(TWO, mixed_batches, DeviceProfile(kv_pages=5, page_tokens=2)).events


def test_a_request_that_could_never_fit_the_pool_is_rejected_at_arrival():
    timeline = simulate(TWO, mixed_batches, DeviceProfile(kv_pages=2, page_tokens=2))
    assert [s.status.value for s in timeline.sequences] == ["rejected", "rejected"]
    assert timeline.events == ()


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        (None, r"the policy returned NoneType \(None\); expected a Batch"),
        (Batch(), "empty batch"),
        (Batch(decode=["A"]), "decode of 'A' at 0.00 ms: it is not running"),
        (Batch(prefill=[PrefillChunk("A", 3)]), "3 tokens, must be 1..2"),
        (Batch(prefill=[PrefillChunk("Z", 1)]), "prefill names str .*'Z'.*, which no request"),
        (Batch(prefill=[PrefillChunk("A", 1), PrefillChunk("A", 1)]), "appears twice"),
    ],
)
def test_invalid_batches_are_rejected_with_a_reason(batch, message):
    with pytest.raises(PolicyError, match=message):
        simulate(TWO, lambda view: batch, DeviceProfile())


def test_idle_device_jumps_to_the_next_arrival():
    trace = parse_trace(
        {"requests": [{"id": "late", "arrivalMs": 7.5, "inputTokens": 1, "outputTokens": 1}]}
    )
    timeline = simulate(trace, lambda v: Batch.prefill_of(v.waiting[0], 1), DeviceProfile())
    assert timeline.events[0].start_ms == 7.5
    assert timeline.all_done_ms == 8.75


def test_batches_and_chunks_are_made_as_their_generated_dataclass_made_them():
    """Batch and PrefillChunk have hand-written __init__s (speed): members become tuples,
    strings and non-iterables stay as given for the contract check to name, the objects stay
    frozen, and replace, equality, hashing and repr behave as the generated ones did."""
    import dataclasses

    chunk = PrefillChunk("C", 2)
    batch = Batch(["A", "B"], [chunk], (x for x in ["D"]))
    assert batch.decode == ("A", "B") and batch.prefill == (chunk,) and batch.preempt == ("D",)
    assert batch.swap_out == () and batch.swap_in == ()
    assert batch == Batch(decode=("A", "B"), prefill=(PrefillChunk("C", 2, 0),), preempt=("D",))
    assert hash(batch) == hash(Batch(("A", "B"), (PrefillChunk(id="C", tokens=2),), ("D",)))
    assert Batch(decode="A").decode == "A" and Batch(decode=b"A").decode == b"A"
    assert Batch(decode=5).decode == 5 and Batch(prefill=None).prefill is None
    assert dataclasses.replace(batch, swap_in=["S"]).swap_in == ("S",)
    assert repr(chunk) == "PrefillChunk(id='C', tokens=2)"
    assert repr(PrefillChunk("C", 2, cached=16)) == "PrefillChunk(id='C', tokens=2, cached=16)"
    assert batch.prefill_tokens == 2 and batch.ids == ["A", "B", "C"]
    for frozen, name in ((batch, "decode"), (chunk, "tokens")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(frozen, name, ())


def test_step_ms_prices_with_cached_positions_and_refuses_unknown_ids():
    """view.step_ms gathers each member's cached positions (C loops): the same figure as the
    device's own rule with the context spelled out, and a KeyError for an id not in the view."""
    from servesim import rules

    device = DeviceProfile(prefill_ms_per_context_token=0.01, decode_ms_per_context_token=0.1)
    seen = []

    def policy(view):
        batch = mixed_batches(view)
        context = {rid: view.live[rid].context_tokens for rid in batch.ids}
        seen.append((view.step_ms(batch), rules.step_duration_ms(device, batch, context)))
        seen.append((view.step_ms(batch), seen[-1][1]))  # the same decode set again: remembered
        if not seen[1:]:
            with pytest.raises(KeyError):
                view.step_ms(Batch(decode=["nobody"]))
        return batch

    simulate(TWO, policy, device)
    assert len(seen) > 2 and all(got == want for got, want in seen)


def test_step_ms_forgets_what_it_priced_when_the_engine_changes_a_cache_or_who_is_live():
    """What view.step_ms remembers is keyed to the engine's count of changes (Tally.changes):
    a changed cache prices anew, a request that left is refused again (KeyError)."""
    from types import MappingProxyType

    from servesim.sequence import Sequence
    from servesim.view import SchedulerView, Tally

    device = DeviceProfile(decode_ms_per_context_token=1.0, overhead_ms=0.0)
    seq = Sequence("A", 0.0, 4, 3, 0)
    seq.prefilled = 4
    live = {"A": seq}
    tally = Tally(changes=0)
    view = SchedulerView(0.0, (), (), None, device, tally=tally, live=MappingProxyType(live))
    batch = Batch(decode=["A"])
    first = view.step_ms(batch)
    seq.decodes = 1  # as EngineState.run_step does, which counts the change
    tally.changes += 1
    assert view.step_ms(batch) == first + 1.0
    del live["A"]  # as EngineState._leave does, which counts the change
    tally.changes += 1
    with pytest.raises(KeyError):
        view.step_ms(batch)
    live["A"] = seq  # a tally nobody counts (Tally()): nothing remembered, each call prices
    plain = SchedulerView(0.0, (), (), None, device, tally=Tally(), live=MappingProxyType(live))
    assert plain.step_ms(batch) == first + 1.0
    seq.decodes = 2
    assert plain.step_ms(batch) == first + 2.0
