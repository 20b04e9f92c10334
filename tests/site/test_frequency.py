"""Frequency and comparison words on lesson pages: outside a checked claim they stop the build;
inside one the claim's condition decides (grader/sitebuild/frequency.py, claims.py)."""

from __future__ import annotations

import jinja2
import pytest

from grader.sitebuild.claims import BuildError, ClaimLog
from grader.sitebuild.frequency import PHRASES, unchecked


def render(source: str, **context) -> str:
    env = jinja2.Environment(autoescape=True)
    log = ClaimLog(page="t.html")
    env.filters["claim"] = log.claim
    return env.from_string(source).render(**context)


def test_words_of_both_languages_are_found_in_prose():
    html = "<p>LIFO 的受害者往往是长 prefill。另一句没问题。</p><li>It is often the long one.</li>"
    found = unchecked(html)
    assert len(found) == 2 and found[0].startswith("[往往]") and "另一句" not in found[0]
    assert found[1].startswith("[often]")


def test_code_figures_names_and_checked_claims_are_not_read():
    html = (
        "<p>trace <code>总是</code> 与 prefill-only；<svg><text>更快</text></svg>"
        '<span data-checked="x">它每次都更快。</span></p>'
    )
    assert unchecked(html) == []


def test_the_brief_words_are_listed():
    listed = set(PHRASES["zh"]) | set(PHRASES["en"])
    assert {
        "通常",
        "往往",
        "总是",
        "从不",
        "大多",
        "更快",
        "只有",
        "只剩",
        "最便宜",
        "最高",
    } <= listed
    assert {"often", "most", "always", "faster", "never", "only"} <= listed


def test_a_true_claim_is_kept_and_marked_and_a_false_one_stops_the_build():
    source = '<p>{% filter claim(n == 3, "three runs") %}三次都更快。{% endfilter %}</p>'
    html = render(source, n=3)
    assert 'data-checked="three runs"' in html and "三次都更快" in html
    assert unchecked(html) == []
    with pytest.raises(BuildError, match="three runs"):
        render(source, n=2)


def test_only_and_most_are_read_in_their_claim_senses():
    html = (
        "<p>budgeted 只完成了 19 个。池子只剩 2 页。large-paged 是最便宜的档位。"
        "goodput 在 2 请求/s 达到最高。</p>"
    )
    found = [line.split("]")[0] + "]" for line in unchecked(html)]
    assert found == ["[只完成]", "[只剩]", "[最便宜]", "[最高]"]


def test_only_and_most_that_claim_nothing_are_not_read():
    html = (
        "<p>最后一个请求离开。只要有位置就补进去。满了只能抢占。A 的最大 ITL 是 14.75 ms。"
        "最长一步是 71 ms。只有全部预留都放得下，才让新请求开始。在最高负载上重扫。"
        "给 prefill 留一个最低份额。哪个档位最便宜？</p>"
        '<button data-correct="false">开环的长尾只有噪声。</button>'
        "<div data-names><td>交付 3 · 工作点：最便宜的可行档位</td></div>"
    )
    assert unchecked(html) == []


def test_a_right_quiz_option_is_read():
    html = '<button data-correct="true">它只有 2 对稳定。</button>'
    assert unchecked(html) and unchecked(html)[0].startswith("[只有]")
