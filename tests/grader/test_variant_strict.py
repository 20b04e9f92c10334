"""Issue 50: every variant as strict as the fixed set (refused draws, sample mutant check)."""

from __future__ import annotations

import dataclasses
import json

from varianttools import SECRET, variant08

from grader.traces.mutants import Mutant, list_mutants
from grader.units import load_unit
from grader.variants import drawn, keys, store, strict

UNIT08 = load_unit("unit08")


def test_a_mutant_that_changes_nothing_survives_and_real_ones_are_killed(tmp_path):
    variant = variant08("s001")
    known = {m.name: m for m in list_mutants(UNIT08)}
    chosen = [known["static_never_waits"], known["paged_preempts_largest"]]
    assert strict.survivors(variant, chosen) == []
    same = tmp_path / "same_as_reference.py"
    same.write_text('"""Mutant: changes nothing."""\n')
    assert strict.survivors(variant, [Mutant("same", same)]) == ["same"]


def test_a_draw_that_lets_a_mutant_survive_is_refused_and_drawn_again(tmp_path, monkeypatch):
    """With variants.strict the generator checks each draw; a refused draw is replaced by the
    next one (other traces) and the reason is recorded in variant.json."""
    monkeypatch.setenv(store.CACHE_ENV, str(tmp_path))
    doc = dict(UNIT08.doc, variants=dict(UNIT08.doc["variants"], strict=True))
    unit = dataclasses.replace(UNIT08, doc=doc)
    checked = []

    def survivors(
        variant, mutants=None
    ):  # the first draw "lets a mutant survive", the second does not
        checked.append((variant.traces_dir / "hidden" / "steady-mix.json").read_bytes())
        return ["some_mutant"] if len(checked) == 1 else []

    monkeypatch.setattr(strict, "survivors", survivors)
    variant = store.variant_unit(unit, keys.variant_key(SECRET, "s001"))
    marker = json.loads((variant.variant_dir / store.MARKER).read_text())
    assert marker["draw"] == 1 and len(checked) == 2 and checked[0] != checked[1]
    assert marker["refused"] == [
        {"draw": 0, "reason": "mutant(s) some_mutant lose no point on any hidden case"}
    ]
    assert (variant.traces_dir / "hidden" / "steady-mix.json").read_bytes() == checked[1]
    first = drawn.hidden_traces(UNIT08, keys.variant_key(SECRET, "s001"), draw=0)
    assert first["steady-mix"].encode() == checked[0]  # the refused draw was draw 0
