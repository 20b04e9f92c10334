"""Chapter 31's scheduling figures come out of the engine and the reference policies exactly."""

import pytest
from u08tools import by_id, cache_after_steps, device, make_trace, measure, pages, run08


def completions(run):
    return {r["id"]: r["statusMs"] for r in run["requests"]}


def mean_completion(run):
    return sum(r["e2eMs"] for r in run["requests"]) / len(run["requests"])


@pytest.mark.parametrize(
    ("profile", "policy", "finish", "mean"),
    [
        ("round-10ms", "static", {"A": 40, "B": 10, "C": 50}, 100 / 3),
        ("round-10ms", "continuous", {"A": 40, "B": 10, "C": 20}, 70 / 3),
        ("round-6-10ms", "static", {"A": 28, "B": 10, "C": 34}, 24),
        ("round-6-10ms", "continuous", {"A": 32, "B": 10, "C": 20}, 62 / 3),
    ],
)
def test_static_vs_continuous_figure_31_1_and_exercise_31_2(profile, policy, finish, mean):
    run = run08("static-vs-continuous", policy, device(profile))
    assert completions(run) == finish
    assert mean_completion(run) == mean


def test_kv_pages_section_31_3_paged():
    """33 pages for 257 + 255 tokens, still 33 after a decode, 49 with a 256-token chunk; 34."""
    run = run08("kv-pages", "paged", device("kv-64-pages"), budget=512)
    after = cache_after_steps(run)
    assert after[1] == {"X": 257, "Y": 255} and pages(after[1]) == 17 + 16 == 33
    assert {k: after[2][k] for k in "XY"} == {"X": 258, "Y": 256}
    assert pages(after[2], ids="XY") == 33
    assert after[2]["Z"] == 256 and pages(after[2]) == 49
    assert {k: after[3][k] for k in "XY"} == {"X": 259, "Y": 257}
    assert pages(after[3], ids="XY") == 34  # exercise 31.5: two more tokens each


def test_kv_pages_section_31_3_reservation():
    """Declaring 1,024 positions for Z needs 64 pages: 97 with X and Y, more than 64."""
    dev = device("kv-64-pages")
    run = run08("kv-pages", "budgeted", dev, budget=512)
    assert pages(cache_after_steps(run)[1]) + dev.pages_for(256 + 768) == 97 > dev.kv_pages
    req = by_id(run)
    z_start = next(e["startMs"] for e in run["events"] for c in e["prefill"] if c["id"] == "Z")
    assert z_start >= max(req["X"]["statusMs"], req["Y"]["statusMs"]), "Z must wait for both"


@pytest.mark.parametrize("policy", ["budgeted", "paged"])
def test_never_fitting_request_is_rejected_at_arrival(policy):
    req = by_id(run08("kv-pages", policy, device("kv-64-pages"), budget=512))["W"]
    assert (req["status"], req["statusMs"], req["tokenTimesMs"]) == ("rejected", 80, [])


def test_little_20_per_second_times_0_4_seconds_is_8():
    """One arrival every 50 ms, each resident exactly 400 ms: N = 8 = 20/s x 0.4 s."""
    trace = make_trace(
        [
            {"id": f"r{k}", "arrivalMs": 50 * k, "inputTokens": 1, "outputTokens": 41}
            for k in range(400)
        ]
    )
    dev = device("round-10ms", max_active=16)
    run = run08(trace, "continuous", dev)
    assert {r["e2eMs"] for r in run["requests"]} == {400}
    law = measure.little(run["requests"], 1000.0, 16000.0)
    assert law.area_ms == pytest.approx(law.clipped_residence_ms, abs=1e-6)
    assert law.mean_in_system == pytest.approx(8, abs=1e-9)
    assert law.completion_rate_per_s == 20
    assert law.mean_residence_ms == 400
