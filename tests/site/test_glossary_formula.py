"""The glossary's definitions of SLO attainment and goodput are what measure.py computes: the
formula each states is evaluated on a graded reference run, with a quality check that fails
some requests and a window that leaves out a warm-up and a cool-down, and must give
measure.goodput's figure. The text must name every gate and denominator of its formula."""

from __future__ import annotations

import json

import pytest

from grader.cases import Kind, load_grading
from grader.course.golden import golden_path
from grader.plugins import load_file
from grader.sitebuild.claims import BuildError
from grader.sitebuild.formula import RunView, evaluate
from grader.sitebuild.glossary import load_glossary
from grader.units import REPO_ROOT, load_unit

MEASURE = load_file(REPO_ROOT / "solutions" / "unit08" / "measure.py")
FIGURES = {"slo-attainment": "attainment_over_submitted", "goodput": "goodput_per_s"}


def reference_run() -> tuple[list[dict], dict]:
    unit = load_unit("unit08")
    case = next(c for c in load_grading(unit).cases if c.kind is Kind.GOODPUT)
    run = json.loads(golden_path(unit, case).read_text(encoding="utf-8"))["run"]
    return run["requests"], case.slo


def glossary_terms() -> dict[str, dict]:
    return {t["id"]: t for t in load_glossary(REPO_ROOT / "labs")}


@pytest.mark.parametrize("term", sorted(FIGURES))
def test_glossary_formula_equals_measure(term):
    from servesim.protocol import measurement_window

    requests, slo_doc = reference_run()
    slo = MEASURE.Slo(ttft_ms=slo_doc.get("ttftMs"), tpot_ms=slo_doc.get("tpotMs"))
    window = measurement_window([r["arrivalMs"] for r in requests], 3, 3)
    inside = [r for r in requests if window.start_ms <= r["arrivalMs"] < window.end_ms]
    assert len(inside) < len(requests)  # the window leaves some requests out

    def passes(r):
        return MEASURE.quality_passes(r["id"], "t", 0.7, 1)

    view = RunView(
        requests, window.start_ms, window.end_ms, passes, lambda r: MEASURE.meets_slo(r, slo)
    )
    want = MEASURE.goodput(requests, slo, window.start_ms, window.end_ms, passes)
    assert 0 < want.qualifying < want.succeeded  # the quality gate and the SLO matter here
    formula = glossary_terms()[term]["formula"]
    assert evaluate(formula, view) == pytest.approx(getattr(want, FIGURES[term]))
    # the same formula without the quality gate gives another figure: the check can fail
    ungated = formula.replace(", quality", "")
    assert evaluate(ungated, view) != pytest.approx(getattr(want, FIGURES[term]))


def test_a_definition_that_leaves_out_a_gate_stops_the_build(tmp_path):
    terms = glossary_terms()
    entry = dict(terms["slo-attainment"], text=terms["slo-attainment"]["text"].replace("质量", "Q"))
    import yaml

    (tmp_path / "glossary.yaml").write_text(
        yaml.safe_dump({"terms": [entry]}, allow_unicode=True), encoding="utf-8"
    )
    with pytest.raises(BuildError, match="质量"):
        load_glossary(tmp_path)


# the request formulas of the glossary and the field of servesim.metrics.request_metrics (what
# the grader's replay recomputes every run's statistics with) that each must equal
METRIC_FIELDS = {"ttft": "ttftMs", "itl": "itlMs", "tpot": "tpotMs", "e2e": "e2eMs"}
SAMPLE_TIMELINES = [  # (arrival, token times): uneven gaps, one token, a long stall
    (0.0, [2.25, 3.5, 4.75, 19.5, 20.75]),
    (4.0, [15.75]),
    (10.0, [12.0, 13.0]),
    (1.5, [40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 90.0]),
]


def test_every_glossary_formula_is_tested():
    formulas = {tid for tid, t in glossary_terms().items() if "formula" in t}
    assert formulas == set(FIGURES) | set(METRIC_FIELDS)


@pytest.mark.parametrize("term", sorted(METRIC_FIELDS))
def test_glossary_latency_formula_equals_the_graders_metric(term):
    from servesim.metrics import request_metrics

    from grader.sitebuild.formula import evaluate_request

    formula = glossary_terms()[term]["formula"]
    for arrival, times in SAMPLE_TIMELINES:
        want = request_metrics(arrival, times)[METRIC_FIELDS[term]]
        got = evaluate_request(formula, arrival, times)
        assert got == pytest.approx(want) if want is not None else got is None, (times, got)


def test_itl_and_tpot_are_apart_and_their_means_differ():
    """The book's §31.7: the per-request TPOT mean and the mean over every ITL differ (the
    latter weights long outputs more); the glossary's two formulas show it on the sample."""
    from grader.sitebuild.formula import evaluate_request

    terms = glossary_terms()
    tpots, itls = [], []
    for arrival, times in SAMPLE_TIMELINES:
        tpot = evaluate_request(terms["tpot"]["formula"], arrival, times)
        tpots += [tpot] if tpot is not None else []
        itls += evaluate_request(terms["itl"]["formula"], arrival, times)
    assert sum(tpots) / len(tpots) != pytest.approx(sum(itls) / len(itls))


@pytest.mark.parametrize(
    "term, wrong",
    [  # conventions other tools use, or slips: each must give another figure on the sample
        ("tpot", "(u[O] - u[1]) / O"),
        ("ttft", "u[1] - u[1]"),
        ("itl", "u[j] - u[1]"),
        ("e2e", "u[O] - u[1]"),
    ],
)
def test_a_wrong_latency_formula_fails_the_comparison(term, wrong):
    from servesim.metrics import request_metrics

    from grader.sitebuild.formula import evaluate_request

    differs = False
    for arrival, times in SAMPLE_TIMELINES:
        want = request_metrics(arrival, times)[METRIC_FIELDS[term]]
        got = evaluate_request(wrong, arrival, times)
        differs |= want is None or got is None or got != pytest.approx(want)
    assert differs


def test_a_request_formula_with_an_unknown_name_stops_the_build(tmp_path):
    import yaml

    entry = dict(glossary_terms()["tpot"], formula="(u[O] - u[1]) / (N - 1)")
    (tmp_path / "glossary.yaml").write_text(
        yaml.safe_dump({"terms": [entry]}, allow_unicode=True), encoding="utf-8"
    )
    with pytest.raises(BuildError, match="'N'"):
        load_glossary(tmp_path)


def test_glossary_m_and_goodput_are_the_books():
    """M is the available cache byte budget of table 31.1 (the lab counts it in pages);
    goodput divides by the observation time, as §31.7 defines it."""
    terms = glossary_terms()
    assert "字节预算" in terms["kv-pages"]["text"] and "只计一次" in terms["kv-pages"]["text"]
    assert terms["goodput"]["formula"].endswith("/ window_s")
    assert "观察时长" in terms["goodput"]["text"] and "窗口长度" in terms["goodput"]["text"]
