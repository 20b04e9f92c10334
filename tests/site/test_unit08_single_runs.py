"""Unit 08's lesson states each comparison's protocol and steadiness, and re-runs the cheapest-tier
search on a fitted device profile (labs/unit08/lesson_steadiness.py, lesson_calibrated.py)."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from servesim.protocol import load_protocol

from grader.sitebuild.build import _num
from grader.sitebuild.claims import BuildError
from grader.sitebuild.plugins import load_module
from grader.units import LABS_DIR, load_unit

HERE = LABS_DIR / "unit08"


@pytest.fixture(scope="module")
def modules():
    return (
        load_module(HERE / "lesson_protocol_runs.py"),
        load_module(HERE / "lesson_calibrated.py"),
        load_module(HERE / "lesson_steadiness.py"),
    )


def _paragraph(site, element_id: str) -> str:
    html = (site / "unit08" / "index.html").read_text(encoding="utf-8")
    match = re.search(rf'<p id="{element_id}">(.*?)</p>', html, re.S)
    assert match, element_id
    return unescape(re.sub(r"<[^>]+>", "", match.group(1)))


def test_fitted_tiers_take_the_profile_and_keep_the_rest(modules):
    _, calibrated, _ = modules
    unit = load_unit("unit08")
    docs = [
        json.loads(p.read_text(encoding="utf-8")) for p in sorted(unit.lab_dir.glob("tiers/*.json"))
    ]
    fitted = calibrated.profile_document(unit.lab_dir)["device"]
    out = calibrated.fitted_tier_docs(docs, fitted)
    base = next(d for d in docs if d["name"] == calibrated.BASE_TIER)["device"]
    for before, after in zip(docs, out, strict=True):
        assert {k: v for k, v in after.items() if k != "device"} == {
            k: v for k, v in before.items() if k != "device"
        }
        kept = set(before["device"]) - set(calibrated.SCALE_BY)
        assert {k: after["device"][k] for k in kept} == {k: before["device"][k] for k in kept}
        for term, by in calibrated.SCALE_BY.items():
            ratio = before["device"][by] / base[by]
            assert after["device"][term] == pytest.approx(fitted[term] * ratio), (
                before["name"],
                term,
            )
        if before["name"] == calibrated.BASE_TIER:
            assert {t: after["device"][t] for t in calibrated.SCALE_BY} == pytest.approx(
                {t: fitted[t] for t in calibrated.SCALE_BY}
            )


def test_a_base_tier_missing_a_term_is_one_clear_error(modules):
    _, calibrated, _ = modules
    docs = [{"name": calibrated.BASE_TIER, "device": {"overheadMs": 0.25}}]
    with pytest.raises(BuildError, match="prefillMsPerToken must be above 0"):
        calibrated.fitted_tier_docs(docs, {})


def test_page_states_the_calibrated_choice_of_the_cached_runs(built_site, modules):
    runs, calibrated, _ = modules
    unit = load_unit("unit08")
    jobs = load_module(HERE / "lesson_jobs.py")
    result = calibrated.calibrated(unit, runs.cache, jobs, runs.sweep(unit))
    text = _paragraph(built_site[0], "calibrated-answer")
    best, before = result["choice"].best, result["before"].best
    assert (best.tier.name if best else "没有可行的档位") in text
    if best:
        assert f"{best.cost.mean:.4f} 美元" in text
    assert f"写定成本下的答案是 {before.tier.name if before else '没有可行的档位'}" in text
    holds = (
        bool(best and before and best.tier.name == before.tier.name)
        and result["choice"].decided
        and result["before"].decided
    )
    assert ("这个答案经得起这次换成本" in text) == holds


def test_single_trace_comparisons_name_their_protocol_and_steadiness(built_site, modules):
    _, _, steadiness = modules
    runs = load_module(HERE / "lesson_constructions.py")
    jobs = load_module(HERE / "lesson_jobs.py")
    unit = load_unit("unit08")
    lesson = runs.Runs(unit)
    protocol = load_protocol(unit.lab_dir / jobs.PROTOCOL)
    judged = steadiness.single_runs(
        jobs.solution_measure(unit), protocol, runs.kv_pool(lesson), runs.timed_vs_budgeted(lesson)
    )
    for element_id, key, names in (
        ("burst-protocol", "burst", ("budgeted", "paged")),
        ("timed-protocol", "timed", ("budgeted", "timed")),
    ):
        text = _paragraph(built_site[0], element_id)
        assert "每个策略跑一次" in text and jobs.PROTOCOL in text
        for index, name in enumerate(names):
            run = judged[key][name]
            word = "稳定" if run["steady"] else "不稳"
            said = " 后半段平均在系统里的请求数是前半段的" if index == 0 else " 是"
            assert f"{name}{said} {_num(run['growth'], 2)} 倍（{word}）" in text
        if not judged[f"{key}_steady"]:
            assert "尚不能确定" in text
