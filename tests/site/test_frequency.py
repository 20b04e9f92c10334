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
    assert {"通常", "往往", "总是", "从不", "大多", "更快"} <= listed
    assert {"often", "most", "always", "faster", "never", "only"} <= listed


def test_a_true_claim_is_kept_and_marked_and_a_false_one_stops_the_build():
    source = '<p>{% filter claim(n == 3, "three runs") %}三次都更快。{% endfilter %}</p>'
    html = render(source, n=3)
    assert 'data-checked="three runs"' in html and "三次都更快" in html
    assert unchecked(html) == []
    with pytest.raises(BuildError, match="three runs"):
        render(source, n=2)
