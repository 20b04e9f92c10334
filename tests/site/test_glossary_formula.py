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
