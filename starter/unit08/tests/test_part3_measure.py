"""Part 3: measure.py: goodput with both denominators, Little's law, TPOT weightings."""

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
    """1,000 submitted over 100 s: 100 rejected, 50 failed, 850 succeeded, 700 met the SLO."""
    out, bad_quality = [], set()
    for i in range(1000):
        t, rid = i * 100.0, f"r{i}"
        if i < 100:
            out.append(record(rid, t, t, "rejected"))
        elif i < 130:
            out.append(record(rid, t, t + 900, "cancelled"))
        else:
            ttft = 800.0 if i >= 850 else 100.0
            out.append(record(rid, t, t + ttft + 40, tokens=[t + ttft, t + ttft + 40]))
            if i < 150:
                bad_quality.add(rid)
    return out, bad_quality


def test_part3_goodput_chapter_numbers():
    requests, bad = chapter_window()
    slo = measure.Slo(ttft_ms=500, tpot_ms=50)
    got = call_measure(
        "goodput", requests, slo, 0.0, 100_000.0, passes=lambda r: r["id"] not in bad
    )
    assert (got.submitted, got.succeeded, got.qualifying) == (1000, 850, 700)
    assert (got.submitted_per_s, got.succeeded_per_s, got.goodput_per_s) == (10, 8.5, 7)
    assert got.attainment_over_submitted == 0.7, "70 % of everything submitted"
    assert abs(got.attainment_over_succeeded - 700 / 850) < 1e-12, "700/850 of the successes"


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
