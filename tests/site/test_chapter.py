"""The chapter-31 worked numbers (unit 07's notes-page plug-in), against the textbook."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from grader.sitebuild.plugins import load_module
from grader.units import LABS_DIR

chapter = load_module(LABS_DIR / "unit07" / "chapter31.py")


def test_padding_utilisation_of_the_textbook_example():
    assert chapter.padding_utilisation([64, 64, 256]) == (Fraction(1, 2), Fraction(3, 8))


@pytest.mark.parametrize(("q", "s"), [(1, 0), (5, 3), (256, 257)])
def test_attention_pairs_formula_matches_a_count(q, s):
    """The engine's rule (formula 31.4) against the page's query-by-query count."""
    from servesim import rules

    assert chapter.attention_pairs(q, s) == rules.attention_pairs(q, s)


def test_kv_page_example():
    kv = chapter.KvExample()
    assert kv.capacity_pages == 64
    assert (kv.now, kv.after_decode, kv.with_chunk, kv.with_declared_max) == (33, 33, 49, 97)
    assert kv.after_steps(2) == 34


def test_mm1_mean_and_p99():
    assert chapter.mm1_mean_s(80, 100) * 1000 == pytest.approx(50)
    assert chapter.mm1_quantile_s(80, 100, 0.99) * 1000 == pytest.approx(230, abs=0.5)
    assert chapter.mm1_mean_s(95, 100) * 1000 == pytest.approx(200)
    assert chapter.mm1_quantile_s(95, 100, 0.99) * 1000 == pytest.approx(921, abs=0.5)
    assert chapter.mm1_quantile_s(80, 100, 0.99) == pytest.approx(math.log(100) / 20)


def test_static_versus_continuous_batching():
    example = chapter.batching_example()
    assert example["static"] == [40, 10, 50]
    assert example["continuous"] == [40, 10, 20]
    assert (example["static_mean"], example["continuous_mean"]) == (
        Fraction(100, 3),
        Fraction(70, 3),
    )


def test_goodput_and_little():
    g = chapter.goodput_example()
    assert (g["offered_rate"], g["success_rate"], g["goodput"]) == (10, 8.5, 7)
    assert g["share_of_submitted"] == Fraction(7, 10)
    assert chapter.chapter_numbers()["little"]["in_system"] == pytest.approx(8)


rounds = chapter.rounds
queues = chapter.queues
fair = chapter.fair


def test_exercise_31_2_load_dependent_round_times():
    example = chapter.batching_example(round_ms=(6, 10))
    assert example["static"] == [28, 10, 34]
    assert example["continuous"] == [32, 10, 20]
    assert (example["static_mean"], example["continuous_mean"]) == (24, Fraction(62, 3))


def test_batch_cost_estimator():
    cost = rounds.BatchCost()
    assert cost.round_ms([]) == cost.fixed_ms
    # one 3-token chunk after 2 cached positions: 3 tokens, 3*2 + 6 = 12 pairs
    assert cost.round_ms([(3, 2)]) == pytest.approx(2.0 + 3 * 0.02 + 12 * 4e-6)
    est = rounds.estimator_example()
    assert est["with_long_ms"] > est["with_short_ms"]
    assert est["apart_ms"] > est["with_short_ms"]
    decodes = [(1, 1000)] * 8
    for cached, fit in ((0, est["fit_short"]), (4096, est["fit_long"])):
        assert cost.round_ms([*decodes, (fit, cached)]) <= 10.0
        assert cost.round_ms([*decodes, (fit + 1, cached)]) > 10.0


def test_prefill_versus_decode_priority():
    ex = rounds.priority_example()["rows"]
    assert ex["decode-first"]["prompt_rounds"] is None  # B == number of decodes: starved
    assert (ex["prefill-first"]["prompt_rounds"], ex["prefill-first"]["decode_gap"]) == (4, 5)
    assert (ex["reserved"]["prompt_rounds"], ex["reserved"]["decode_gap"]) == (16, 2)
    # spare budget: decode-first serves the prompt with what is left, nobody stalls
    spare = rounds.priority_rounds(rounds.Priority.DECODE_FIRST, 256, 192, 1024)
    assert (spare["prompt_rounds"], spare["decode_gap"]) == (16, 1)


def test_residence_area_of_exercise_31_6():
    ex = queues.area_example()
    assert ex["counts"] == [1, 2, 1]
    assert ex["area"] == ex["clipped"] == 4
    assert (ex["mean_n"], ex["rate"], ex["mean_stay"]) == (Fraction(4, 3), Fraction(2, 3), 2)
    # a stay cut by the window counts only its part inside
    cut = queues.area_example(stays=((-1, 2), (1, 5)), window=(0, 3))
    assert cut["area"] == cut["clipped"] == 2 + 2


@pytest.mark.parametrize("z", [0.0, 1.0, 30.0, 500.0])
def test_mm1_transform_series_matches_closed_form(z):
    series, closed = queues.mm1_transform(80.0, 100.0, z)
    assert series == pytest.approx(closed, rel=1e-12)


def test_mm1_row_matches_the_textbook():
    row = queues.mm1_row(80.0, 100.0)
    assert (row["mean_ms"], row["wait_ms"]) == pytest.approx((50, 40))
    assert row["in_queue"] == pytest.approx(row["in_system"] - row["rho"])
    assert row["p99_ms"] == pytest.approx(1000 * chapter.mm1_quantile_s(80, 100, 0.99))


def test_admission_union_bound_buffer_and_burst():
    ad = queues.admission_example()
    assert [r["admit"] for r in ad["rows"]] == [True, False]
    un = queues.union_bound()
    assert (un["tail"], un["coverage"], un["each_gives"]) == (
        Fraction(1, 50),
        Fraction(49, 50),
        Fraction(99, 100),
    )
    assert queues.buffer_fill_s(64, 12, 4) == 8
    assert queues.buffer_fill_s(64, 4, 4) is None
    burst = queues.burst_example()
    assert (burst["backlog"], burst["drain_s"]) == (200, 10)


def test_fairness_units_and_deficit_credits():
    units = fair.fairness_units()
    assert (units["request_share_ratio"], units["token_requests_a"]) == (100, 100)
    ex = fair.deficit_example()
    assert ex["served"]["A"] == ex["served"]["B"]
    assert ex["burst_capped"] == ex["cap"] // 100
    assert ex["burst_uncapped"] == (ex["idle"] + 1) * ex["quantum"] // 100


def test_preemption_crossover():
    cost = fair.PreemptCost()
    n = cost.crossover_tokens()
    assert cost.recompute_ms(n - 1) <= cost.swap_ms(n - 1)
    assert cost.recompute_ms(n) > cost.swap_ms(n)


def test_weighted_statistics_and_closed_loop_omission():
    ws = fair.weighted_stats()
    assert ws["request_mean"] == 35
    assert ws["token_mean"] == pytest.approx((10 * 20 + 100 * 50) / 110)
    loop = fair.loop_example()
    assert loop["open_n"] == 150 and loop["missing"] == 50
    assert loop["open_p99"] == pytest.approx(1000)
    assert loop["closed_p99"] == pytest.approx(10)
    assert loop["closed_max"] > 900
    # no stall: both loads see the bare service time
    calm = fair.loop_example(stall=(0.0, 0.0))
    assert calm["open_p99"] == calm["closed_p99"] == 10
