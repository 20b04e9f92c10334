"""Issue 50: a spec keeps a discriminating case in every draw (``pin``, ``vary: {set}``), and
unit 08's variants are made strict: every mutant loses points on each sample variant."""

from __future__ import annotations

import json

import pytest

from grader.traces.errors import SpecError
from grader.traces.mutants import list_mutants
from grader.traces.tracegen import trace_from_spec
from grader.units import load_unit
from grader.variants import drawn, sample, store, strict

SPEC = {
    "name": "p",
    "generate": {
        "seed": 4,
        "count": 12,
        "arrivals": {"process": "poisson", "ratePerMs": 0.1},
        "inputTokens": {"dist": "uniform", "min": 10, "max": 90},
        "outputTokens": {"dist": "choice", "values": [5, 9]},
        "maxOutputTokens": {"dist": "constant", "value": 12},
    },
}


def _spec(**changes) -> dict:
    spec = json.loads(json.dumps(SPEC))
    spec["generate"].update(changes)
    return spec


def test_pin_sets_the_named_requests_lengths_and_leaves_every_other_draw_as_it_was():
    plain = trace_from_spec(_spec())["requests"]
    pinned = trace_from_spec(_spec(pin=[{"request": 2, "outputTokens": 1, "inputTokens": 3}]))
    pinned = pinned["requests"]
    assert (pinned[1]["inputTokens"], pinned[1]["outputTokens"]) == (3, 1)
    assert pinned[1]["maxOutputTokens"] == 12  # the optional fields see the pinned length
    assert pinned[1]["arrivalMs"] == plain[1]["arrivalMs"]
    assert pinned[:1] + pinned[2:] == plain[:1] + plain[2:]
    with pytest.raises(SpecError, match=r"pin: request 13 is past 'count' \(12\)"):
        trace_from_spec(_spec(pin=[{"request": 13, "outputTokens": 1}]))
    with pytest.raises(SpecError, match=r"pin #1: unknown field 'arrivalMs'"):
        trace_from_spec(_spec(pin=[{"request": 1, "arrivalMs": 0}]))


def test_a_set_entry_gives_every_draw_the_same_value_and_may_name_a_new_field():
    spec = dict(SPEC, vary={"pin": {"set": [{"request": 1, "outputTokens": 1}]}})
    for n in range(5):
        doc = drawn.draw_spec(spec, f"key{n}", "p")
        assert doc["generate"]["pin"] == [{"request": 1, "outputTokens": 1}]
        assert trace_from_spec(doc)["requests"][0]["outputTokens"] == 1
    assert "pin" not in SPEC["generate"]  # the fixed trace's spec is untouched
    typo = dict(SPEC, vary={"pins": {"set": [{"request": 1}]}})
    with pytest.raises(SpecError, match="'pins'"):
        trace_from_spec(drawn.draw_spec(typo, "k", "p"))


MEASURE = ["measure/one_token_fails_tpot", "measure/succeeded_excludes_quality"]


@pytest.mark.parametrize("index", [0, 1])
def test_unit08_sample_variants_are_made_strict_and_kill_every_mutant(index):
    """Sample variants 0 and 1 are draws on which, before the specs pinned their cases, one of
    the two measure mutants survived; now no draw is refused for them (the spec, not a redraw,
    keeps their case), and the variant records that the strict check ran on the whole corpus
    and that every mutant lost points on the draw it kept."""
    unit = load_unit("unit08")
    variant = store.variant_unit(unit, sample.sample_key(index))
    marker = json.loads((variant.variant_dir / store.MARKER).read_text())
    assert marker["strictChecked"] == len(list_mutants(unit)) > 40
    assert marker["draw"] == len(marker["refused"])
    assert not [r for r in marker["refused"] if any(name in r["reason"] for name in MEASURE)]
    chosen = [m for m in list_mutants(unit) if m.name in MEASURE]
    assert len(chosen) == 2 and strict.survivors(variant, chosen) == []
