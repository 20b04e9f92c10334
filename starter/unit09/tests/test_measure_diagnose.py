"""measure.py, diagnose() (exercise 31.13): runs of this lab's engine whose cause is known from
how their trace was built (tailruns.py, with this lab's numbers from tailruns.json), on a device
whose memory stays free."""

import measure
import tailruns
from measurekit import event, request, run

BASELINE = tailruns.baseline_run()


def situation(name, **settings):
    return tailruns.engine_run(tailruns.SITUATIONS[name](), **settings)


def test_light_load_is_no_problem_against_a_baseline():
    got = measure.diagnose(situation("light"), BASELINE)
    assert got.cause is measure.Cause.NONE, f"{got.cause}: {got.evidence}"


def test_nothing_fired_and_no_baseline_is_not_enough_evidence():
    got = measure.diagnose(situation("light"))
    assert got.cause is measure.Cause.NOT_ENOUGH_EVIDENCE, (
        "without a baseline nothing says whether the tail grew"
    )


def test_arrivals_above_capacity_are_overload():
    """Arrivals faster than 8 slots serve (about 11/s): the queue grows while memory is free."""
    got = measure.diagnose(situation("overload"), BASELINE)
    assert got.cause is measure.Cause.OVERLOAD, f"{got.cause}: {got.evidence}"
    assert got.evidence.queue_second_half > got.evidence.queue_first_half
    assert got.also == ()


def test_long_prompts_among_decoding_streams_are_prefill_blocking():
    """A long prompt about every second (prefilled in one step) among light load."""
    got = measure.diagnose(situation("long prompts"), BASELINE)
    assert got.cause is measure.Cause.PREFILL_BLOCKING, f"{got.cause}: {got.evidence}"
    assert got.also == ()


def test_rejections_under_admission_control_are_overload():
    """A queue cap of 4 holds the queue still; many submitted requests are rejected."""
    got = measure.diagnose(situation("overload", queue_cap=4), BASELINE)
    assert got.cause is measure.Cause.OVERLOAD, f"{got.cause}: {got.evidence}"
    assert got.evidence.rejected.den == 60, "rejected / submitted: every request was submitted"


def test_too_few_requests_is_not_enough_evidence():
    got = measure.diagnose(tailruns.engine_run(tailruns.short_requests(40, count=19)), BASELINE)
    assert got.cause is measure.Cause.NOT_ENOUGH_EVIDENCE, "19 requests cannot give a p99"


def test_slow_readers_on_the_engine_are_slow_clients():
    got = measure.diagnose(situation("slow clients"), BASELINE)
    assert got.cause is measure.Cause.SLOW_CLIENTS, f"{got.cause}: {got.evidence}"


def test_paused_streams_are_slow_clients_not_blocking():
    """Streaming fields as a streaming run file records them: 100 streams with 10 ms gaps, one
    40 ms gap ended by a step with prefill, and 5 streams whose 500 ms gap spans a pause. The
    pauses make the ITL tail, not the schedule: its own p99 is still 10 ms."""
    requests, ends = [], {}
    for i in range(100):
        start = i * 1000.0
        tokens = [start + 5, start + 15, start + (55 if i == 0 else 25)]
        record = request(f"s{i}", start, tokens=tokens)
        if 1 <= i <= 5:
            record["tokenTimesMs"][2] = start + 515
            record["pausedMs"] = [[start + 16, start + 514]]
        requests.append(record)
        for t in record["tokenTimesMs"]:
            ends[t] = event(t - 1, t, decode=[record["id"]])
    ends[55.0] = event(15.0, 55.0, decode=["s0"], prefill=[("x", 0, 800)])
    requests.append(request("x", 10.0, status="cancelled", end=60.0, inputs=1600))
    got = measure.diagnose(run(requests, list(ends.values()), streamBufferBytes=2048))
    assert got.cause is measure.Cause.SLOW_CLIENTS, f"{got.cause}: {got.why}"
    assert got.also == (), "gaps across a pause are the buffer's, not prefill blocking"
    assert (got.evidence.slow.paused.num, got.evidence.slow.paused.den) == (5, 100)
    assert got.evidence.p99_itl_ms == 500, "the client's ITL tail includes the paused gaps"
