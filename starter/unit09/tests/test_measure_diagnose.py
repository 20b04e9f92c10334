"""measure.py, diagnose() (exercise 31.13): runs of this lab's engine whose cause is known from
how their trace was built (tailruns.py), on a device whose memory stays free."""

import measure
import pytest
import tailruns
from measurekit import request, run

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
    """25 requests/s on 8 slots that serve about 11/s: the queue grows while memory is free."""
    got = measure.diagnose(situation("overload"), BASELINE)
    assert got.cause is measure.Cause.OVERLOAD, f"{got.cause}: {got.evidence}"
    assert got.evidence.queue_second_half > got.evidence.queue_first_half
    assert got.also == ()


def test_long_prompts_among_decoding_streams_are_prefill_blocking():
    """One 6,000-token prompt a second (300 ms of prefill in one step) among light load."""
    got = measure.diagnose(situation("long prompts"), BASELINE)
    assert got.cause is measure.Cause.PREFILL_BLOCKING, f"{got.cause}: {got.evidence}"
    assert got.also == ()


def test_rejections_under_admission_control_are_overload():
    """A queue cap of 4 holds the queue still; half the submitted requests are rejected."""
    got = measure.diagnose(situation("overload", queue_cap=4), BASELINE)
    assert got.cause is measure.Cause.OVERLOAD, f"{got.cause}: {got.evidence}"
    assert got.evidence.rejected.den == 60, "rejected / submitted: every request was submitted"


def test_too_few_requests_is_not_enough_evidence():
    got = measure.diagnose(tailruns.engine_run(tailruns.short_requests(40, count=19)), BASELINE)
    assert got.cause is measure.Cause.NOT_ENOUGH_EVIDENCE, "19 requests cannot give a p99"


@pytest.mark.skipif(not tailruns.engine_streams(), reason="this engine has no streaming output")
def test_slow_readers_on_the_engine_are_slow_clients():
    got = measure.diagnose(situation("slow clients"), BASELINE)
    assert got.cause is measure.Cause.SLOW_CLIENTS, f"{got.cause}: {got.evidence}"


def test_paused_streams_are_slow_clients():
    """Streaming fields (what a streaming run file records): 3 of 40 streamed requests paused."""
    requests = [request(f"s{i}", i * 10.0, tokens=[i * 10.0 + 5, i * 10.0 + 6]) for i in range(40)]
    for record in requests[:3]:
        record["pausedMs"] = [[record["tokenTimesMs"][0], record["tokenTimesMs"][0] + 0.5]]
    entry = run(requests, [], streamBufferBytes=2048)
    got = measure.diagnose(entry)
    assert got.cause is measure.Cause.SLOW_CLIENTS, f"{got.cause}"
    assert (got.evidence.slow.paused.num, got.evidence.slow.paused.den) == (3, 40)
