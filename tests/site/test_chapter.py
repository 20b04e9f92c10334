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
    assert chapter.attention_pairs(q, s) == chapter.attention_pairs_formula(q, s)


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
