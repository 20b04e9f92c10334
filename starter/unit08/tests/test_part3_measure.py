"""Part 3: measure.py: goodput with both denominators, Little's law, TPOT weightings, and the
protocol's pieces: one replication over the window, intervals, verdicts, the steady check."""

import measure
from adapters import call_measure, run_policy


def record(rid, arrival, end, status="completed", tokens=None):
    tokens = list(tokens if tokens is not None else ([] if status != "completed" else [end]))
    return {
        "id": rid,
        "arrivalMs": arrival,
        "statusMs": end,
        "status": status,
        "tokenTimesMs": tokens,
        "ttftMs": tokens[0] - arrival if tokens else None,
        "tpotMs": (tokens[-1] - tokens[0]) / (len(tokens) - 1) if len(tokens) > 1 else None,
    }


def chapter_window():
    """1,000 submitted over 100 s: 100 rejected, 50 failed (cancelled), 850 succeeded
    (completed), of which 700 met every target: 30 failed the quality check, 120 the SLO."""
    out, bad_quality = [], set()
    for i in range(1000):
        t, rid = i * 100.0, f"r{i}"
        if i < 100:
            out.append(record(rid, t, t, "rejected"))
        elif i < 150:
            out.append(record(rid, t, t + 900, "cancelled"))
        else:
            ttft = 800.0 if i >= 880 else 100.0
            out.append(record(rid, t, t + ttft + 40, tokens=[t + ttft, t + ttft + 40]))
            if i < 180:
                bad_quality.add(rid)
    return out, bad_quality


def test_part3_goodput_chapter_numbers():
    requests, bad = chapter_window()
    slo = measure.Slo(ttft_ms=500, tpot_ms=50)
    got = call_measure(
        "goodput", requests, slo, 0.0, 100_000.0, passes=lambda r: r["id"] not in bad
    )
    assert (got.submitted, got.succeeded, got.qualifying) == (1000, 850, 700), (
        "succeeded = completed, whatever the quality; qualifying = succeeded and every target met"
    )
    assert (got.submitted_per_s, got.succeeded_per_s, got.goodput_per_s) == (10, 8.5, 7)
    assert got.attainment_over_submitted == 0.7, "70 % of everything submitted"
    assert abs(got.attainment_over_succeeded - 700 / 850) < 1e-12, "700/850 of the successes"


def test_part3_goodput_window_is_half_open():
    """[start, end): a request arriving at the start is in, one arriving at the end is out."""
    requests = [record(f"e{i}", t, t + 10.0) for i, t in enumerate((999.0, 1000.0, 2000.0))]
    got = call_measure("goodput", requests, measure.Slo(), 1000.0, 2000.0)
    assert got.submitted == 1, (
        f"{got.submitted} submitted: the window [1000, 2000) holds the arrival at 1000 only"
    )


def test_part3_meets_slo():
    ok = record("a", 0, 140, tokens=[100, 140])
    assert call_measure("meets_slo", ok, measure.Slo(ttft_ms=100, tpot_ms=40)) is True
    assert call_measure("meets_slo", ok, measure.Slo(ttft_ms=99)) is False
    assert call_measure("meets_slo", record("b", 0, 5, "cancelled"), measure.Slo()) is False


def test_part3_little_exercise_31_6():
    requests = [record("a", 0.0, 2000.0), record("b", 1000.0, 3000.0)]
    assert call_measure("area_under_n", requests, 0.0, 3000.0) == 4000
    assert call_measure("clipped_residence", requests, 0.0, 3000.0) == 4000
    law = measure.little(requests, 0.0, 3000.0)
    assert (
        abs(law.mean_in_system - 4 / 3) < 1e-12 and abs(law.completion_rate_per_s - 2 / 3) < 1e-12
    )
    assert law.mean_residence_ms == 2000


def test_part3_little_both_sides_agree_on_a_real_run():
    run = run_policy("burst", "paged", "pool-256")
    for window in ((0.0, 5000.0), (4000.0, 9000.0), (0.0, 30000.0)):
        area = call_measure("area_under_n", run["requests"], *window)
        clipped = call_measure("clipped_residence", run["requests"], *window)
        assert abs(area - clipped) < 1e-6, f"window {window}: area {area} vs residences {clipped}"


def test_part3_tpot_request_vs_token_weighted():
    short = record("s", 0, 20, tokens=[10, 20])
    long = record("l", 0, 130, tokens=[10, 50, 90, 130])
    assert call_measure("tpot_means", [short, long]) == (25, 32.5)
    assert call_measure("tpot_means", [record("x", 0, 5, tokens=[5])]) == (None, None)


def test_part3_interval_is_student_t():
    got = call_measure("interval", [0.93, 0.95, 0.91, 0.96, 0.94], 0.95)
    assert got.n == 5 and abs(got.mean - 0.938) < 1e-12
    # t(0.975, 4) = 2.7764..., so the half-width is 2.7764 * sd / sqrt(5)
    assert abs((got.high - got.low) / 2 - 2.7764451 * got.sd / 5**0.5) < 1e-6
    # the sample standard deviation (divide by n - 1): five replications are a sample
    assert abs(got.sd - 0.0192353841) < 1e-9, f"sd {got.sd}: divide by n - 1, not by n"
    try:
        call_measure("interval", [0.9], 0.95)
    except ValueError:
        pass
    else:
        raise AssertionError("interval() of one replication must raise ValueError")


def _iv(low, high, n=5):
    mean = (low + high) / 2
    return measure.Interval(n, mean, (high - low) / 2, low, high, 0.95)


def test_part3_verdict_three_ways():
    target = measure.Target("attainment", 0.9)
    feasible = call_measure("verdict", [(_iv(0.92, 0.95), target)], True)
    assert feasible.outcome == measure.FEASIBLE
    assert call_measure("verdict", [(_iv(0.7, 0.85), target)], True).outcome == measure.INFEASIBLE
    unknown = call_measure("verdict", [(_iv(0.88, 0.94), target)], True)
    assert unknown.outcome == measure.NOT_YET_KNOWN and unknown.undecided == ("attainment",)
    assert unknown.replications_needed is not None and unknown.replications_needed > 5
    drifting = call_measure("verdict", [(_iv(0.92, 0.95), target)], False)
    assert drifting.outcome == measure.NOT_YET_KNOWN and drifting.longer_runs


def test_part3_steady_state_halves_of_the_window():
    steady = [record(f"s{i}", i * 100.0, i * 100.0 + 150) for i in range(100)]
    got = call_measure("steady_state", steady, 1000.0, 9000.0, 0.25)
    assert abs(got.first_half_in_system - 1.5) < 1e-9 and got.steady
    growing = [record(f"g{i}", i * 100.0, 10_000.0) for i in range(100)]
    assert not call_measure("steady_state", growing, 1000.0, 9000.0, 0.25).steady


def test_part3_replication_leaves_the_warm_up_out():
    requests = [
        record(f"o{i}", i * 100.0, i * 100.0 + 50, tokens=[i * 100.0 + 50]) for i in range(50)
    ]
    slo = measure.Slo(ttft_ms=40)  # every TTFT is 50 ms: nobody qualifies
    got = call_measure("replication", requests, slo, 10, 5, 0.25)
    assert (got.window_start_ms, got.window_end_ms) == (1000.0, 4500.0)
    assert got.goodput.submitted == 35 and got.goodput.qualifying == 0
    assert got.p99_ttft_ms == 50 and got.quality_pass_rate == 1.0
    # each replication draws its own quality outcomes: the seed is part of the draw
    ids = [f"r{i}" for i in range(200)]
    draws = [[measure.quality_passes(i, "t", 0.5, seed) for i in ids] for seed in (1, 2)]
    assert draws[0] != draws[1], "quality_passes(): every seed draws the same outcomes"


def _tail_run(ttfts, unserved=0):
    """5 warm-up requests, one measured request per TTFT, ``unserved`` rejected ones, 5 of
    cool-down; arrivals 1 s apart."""
    requests, t = [], 0.0
    for ttft in [10.0] * 5 + list(ttfts):
        requests.append(record(f"q{len(requests)}", t, t + ttft, tokens=[t + ttft]))
        t += 1000.0
    for _ in range(unserved):
        requests.append(record(f"q{len(requests)}", t, t, "rejected"))
        t += 1000.0
    for _ in range(5):
        requests.append(record(f"q{len(requests)}", t, t + 10.0, tokens=[t + 10.0]))
        t += 1000.0
    return requests


def test_part3_replication_p99_is_the_nearest_rank():
    """p99 of n values: the ceil(0.99 n)-th smallest (1-based), not an interpolated or shifted
    index."""
    cases = {50: 50.0, 100: 99.0, 150: 149.0}  # TTFTs 1..n: nearest rank ceil(0.99 n)
    for n, want in cases.items():
        got = call_measure("replication", _tail_run(range(1, n + 1)), measure.Slo(), 5, 5, 0.25)
        assert got.goodput.submitted == n
        assert got.p99_ttft_ms == want, (
            f"{n} TTFTs 1..{n} ms: p99 {got.p99_ttft_ms}, expected the nearest rank, {want}"
        )


def test_part3_replication_p99_counts_requests_without_a_first_token():
    """A rejected request never got a first token: it counts as infinitely late, and when more
    than 1 % of the window has none, the p99 is infinite (reported as None)."""
    few = call_measure(
        "replication", _tail_run([20.0] * 199, unserved=1), measure.Slo(), 5, 5, 0.25
    )
    assert few.p99_ttft_ms == 20.0, "1 unserved request in 200 is within the 1 % tail"
    many = call_measure(
        "replication", _tail_run([20.0] * 98, unserved=2), measure.Slo(), 5, 5, 0.25
    )
    assert many.p99_ttft_ms is None, (
        f"p99 {many.p99_ttft_ms}: 2 of 100 requests got no first token, so the p99 is infinite"
    )
