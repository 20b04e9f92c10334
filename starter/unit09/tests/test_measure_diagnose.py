"""measure.py, diagnose() (exercise 31.13): runs of this lab's engine whose cause is known from
how their trace was built, on a device whose memory stays free (K = 8 slots, a large pool)."""

import measure
from measurekit import request, run
from servesim import Batch, DeviceProfile, PrefillChunk, parse_trace, simulate
from servesim.runfile import build_run

DEVICE = DeviceProfile(
    prefill_ms_per_token=0.05, decode_batch_ms=10.0, decode_ms_per_seq=0.2, max_active=8,
    kv_pages=8192,
)  # fmt: skip
BUDGET = 8192  # a whole long prompt fits one step: prefill is not chunked


def fill_slots(view, budget):
    """Decode every running request, then prefill the queue in order within the budget while
    fewer than K hold KV (given: the scheduler of these runs, not one you write)."""
    decode = [s.id for s in view.running]
    left, active, chunks = budget - len(decode), view.active, []
    for seq in view.waiting:
        if left <= 0:
            break
        if not seq.holds_kv:
            if active >= view.device.max_active:
                break
            active += 1
        tokens = min(left, seq.remaining_prefill)
        chunks.append(PrefillChunk(seq.id, tokens))
        left -= tokens
    return Batch(decode=decode, prefill=chunks)


def short_requests(every_ms, count=60, shift=0):
    """``count`` requests ``every_ms`` apart: prompts of 100-300 tokens, 48-80 out."""
    return [
        {
            "id": f"r{i}",
            "arrivalMs": i * every_ms,
            "inputTokens": 100 + 50 * ((i + shift) % 5),
            "outputTokens": 48 + 8 * ((i * 3 + shift) % 5),
        }
        for i in range(count)
    ]


def long_prompts(every_ms, until_ms):
    return [
        {"id": f"long{i}", "arrivalMs": 300 + i * every_ms, "inputTokens": 6000, "outputTokens": 4}
        for i in range(int((until_ms - 300) // every_ms))
    ]


def engine_run(rows):
    rows = sorted(rows, key=lambda r: r["arrivalMs"])
    trace = parse_trace({"name": "diagnose", "requests": rows})
    timeline = simulate(trace, lambda view: fill_slots(view, BUDGET), DEVICE, budget=BUDGET)
    return build_run("fill_slots", {"budget": BUDGET}, DEVICE, timeline, None, extended=True)


BASELINE = engine_run(short_requests(400, shift=2))


def test_light_load_is_no_problem_against_a_baseline():
    got = measure.diagnose(engine_run(short_requests(400)), BASELINE)
    assert got.cause is measure.Cause.NONE, f"{got.cause}: {got.evidence}"


def test_nothing_fired_and_no_baseline_is_not_enough_evidence():
    got = measure.diagnose(engine_run(short_requests(400)))
    assert got.cause is measure.Cause.NOT_ENOUGH_EVIDENCE, (
        "without a baseline nothing says whether the tail grew"
    )


def test_arrivals_above_capacity_are_overload():
    """25 requests/s on 8 slots that serve about 11/s: the queue grows while memory is free."""
    got = measure.diagnose(engine_run(short_requests(40)), BASELINE)
    assert got.cause is measure.Cause.OVERLOAD, f"{got.cause}: {got.evidence}"
    assert got.evidence.queue_second_half > got.evidence.queue_first_half
    assert got.also == ()


def test_long_prompts_among_decoding_streams_are_prefill_blocking():
    """One 6,000-token prompt a second (300 ms of prefill in one step) among light load."""
    shorts = short_requests(400)
    got = measure.diagnose(engine_run(shorts + long_prompts(1000, 24_000)), BASELINE)
    assert got.cause is measure.Cause.PREFILL_BLOCKING, f"{got.cause}: {got.evidence}"
    assert got.also == ()


def test_too_few_requests_is_not_enough_evidence():
    got = measure.diagnose(engine_run(short_requests(40, count=19)), BASELINE)
    assert got.cause is measure.Cause.NOT_ENOUGH_EVIDENCE, "19 requests cannot give a p99"


def test_paused_streams_are_slow_clients():
    """Streaming fields (what a streaming run file records): 3 of 40 streamed requests paused."""
    requests = [request(f"s{i}", i * 10.0, tokens=[i * 10.0 + 5, i * 10.0 + 6]) for i in range(40)]
    for record in requests[:3]:
        record["pausedMs"] = [[record["tokenTimesMs"][0], record["tokenTimesMs"][0] + 0.5]]
    entry = run(requests, [], streamBufferBytes=2048)
    got = measure.diagnose(entry)
    assert got.cause is measure.Cause.SLOW_CLIENTS, f"{got.cause}"
    assert (got.evidence.slow.paused.num, got.evidence.slow.paused.den) == (3, 40)
