"""Chapter 31's measurement figures (31.4, 31.7, exercise 31.6) from the reference measure.py."""

from fractions import Fraction

import pytest
from u08tools import measure, record

SLO = measure.Slo(ttft_ms=500.0, tpot_ms=50.0)


def chapter_window():
    """1,000 submitted in 100 s: 100 rejected, 50 failed, 850 succeeded, 700 within every target.

    The 50 failures are cancelled at their deadline; of the 850 completed (succeeded, whatever
    their quality) 30 fail the quality check and 120 miss the TTFT target.
    """
    requests, failing_quality = [], set()
    for i in range(1000):
        arrival = i * 100.0  # one every 100 ms: the window [0, 100 s) holds all of them
        rid = f"r{i:04d}"
        if i < 100:
            requests.append(record(rid, arrival, arrival, status="rejected"))
        elif i < 150:
            requests.append(record(rid, arrival, arrival + 900, status="cancelled"))
        else:
            slow = i >= 880  # 120 completed too late; 150..179 fail the quality check
            ttft = 800.0 if slow else 100.0
            requests.append(
                record(
                    rid, arrival, arrival + ttft + 40, tokens=[arrival + ttft, arrival + ttft + 40]
                )
            )
            if i < 180:
                failing_quality.add(rid)
    return requests, failing_quality


def test_goodput_chapter_window():
    requests, failing = chapter_window()
    report = measure.goodput(requests, SLO, 0.0, 100_000.0, passes=lambda r: r["id"] not in failing)
    assert (report.submitted, report.succeeded, report.qualifying) == (1000, 850, 700)
    assert report.submitted_per_s == 10
    assert report.succeeded_per_s == 8.5
    assert report.goodput_per_s == 7
    assert report.attainment_over_submitted == 0.7
    assert Fraction(report.attainment_over_succeeded).limit_denominator(1000) == Fraction(700, 850)


def test_rejected_and_cancelled_count_as_submitted():
    requests = [
        record("a", 0, 10),
        record("b", 1, 1, status="rejected"),
        record("c", 2, 50, status="cancelled"),
    ]
    report = measure.goodput(requests, measure.Slo(), 0, 1000)
    assert report.submitted == 3 and report.qualifying == 1
    assert report.attainment_over_submitted == pytest.approx(1 / 3)
    assert report.attainment_over_succeeded == 1


def test_little_exercise_31_6():
    """Residences [0, 2) and [1, 3) s, window [0, 3] s: area 4, N 4/3, rate 2/3, residence 2."""
    requests = [record("a", 0.0, 2000.0), record("b", 1000.0, 3000.0)]
    law = measure.little(requests, 0.0, 3000.0)
    assert law.area_ms == 4000 == law.clipped_residence_ms
    assert Fraction(law.mean_in_system).limit_denominator(100) == Fraction(4, 3)
    assert Fraction(law.completion_rate_per_s).limit_denominator(100) == Fraction(2, 3)
    assert law.mean_residence_ms == 2000
    assert law.mean_in_system == pytest.approx(
        law.completion_rate_per_s * law.mean_residence_ms / 1000
    )


def test_little_clips_at_the_window_edges():
    requests = [record("a", -500.0, 700.0), record("b", 900.0, 4000.0), record("c", 50.0, 60.0)]
    law = measure.little(requests, 0.0, 1000.0)
    assert law.area_ms == law.clipped_residence_ms == 700 + 100 + 10


def test_tpot_request_vs_token_weighted():
    short = record("s", 0, 20, tokens=[10, 20])  # TPOT 10 over 1 gap
    long = record("l", 0, 130, tokens=[10 + 40 * k for k in range(4)])  # TPOT 40 over 3 gaps
    per_request, per_token = measure.tpot_means([short, long])
    assert per_request == 25  # (10 + 40) / 2
    assert per_token == 32.5  # (10 + 120) / 4
