"""A variant copies the fixed set's golden files and reference verdicts for the cases whose
trace it did not redraw, and builds only the others (``grader.variants.fixedset``)."""

from __future__ import annotations

import base64
import pickle

from varianttools import SECRET, variant_of

from grader.cases import load_grading
from grader.course import golden
from grader.course.golden import GoldenState
from grader.units import load_unit
from grader.variants import fixedset, keys, store, verdicts


def test_a_variant_builds_only_the_cases_on_redrawn_traces(tmp_path, monkeypatch):
    monkeypatch.setenv(store.CACHE_ENV, str(tmp_path))
    unit, built = load_unit("unit07"), []
    real = golden.build_all

    def spy(unit_, cases):
        built.extend(case.id for case in cases)
        return real(unit_, cases)

    monkeypatch.setattr(golden, "build_all", spy)
    variant = store.variant_unit(unit, keys.variant_key(SECRET, "fixedset-1"))
    every = {case.id for case in load_grading(unit).cases}
    unvaried = set(fixedset.unvaried_cases(unit))
    assert unvaried and unvaried < every
    assert set(built) == every - unvaried  # the old code built every case
    for case in load_grading(unit).cases:  # the copies are the fixed set's files, byte for byte
        if case.id in unvaried:
            mine = golden.golden_path(variant, case).read_bytes()
            assert mine == golden.golden_path(unit, case).read_bytes(), case.id
    kept = pickle.loads(base64.b64decode(store.place_of_fixed(unit).read_text()))
    assert {entry[0] for entry in kept["entries"]} == unvaried
    assert store.place_of_fixed(unit).stat().st_mode & 0o077 == 0  # hidden verdicts: private


def test_every_golden_file_of_a_variant_is_what_the_reference_makes_on_it():
    variant = variant_of("unit07")
    statuses = golden.check_golden(variant)
    assert statuses and all(s.state is GoldenState.OK for s in statuses), [
        (s.path.name, s.reason) for s in statuses if s.state is not GoldenState.OK
    ]
    doc = pickle.loads((variant.variant_dir / verdicts.FILE).read_bytes())
    assert {entry[0] for entry in doc["entries"]} == {c.id for c in load_grading(variant).cases}


def test_a_fixed_golden_file_that_is_not_current_is_not_copied(tmp_path, monkeypatch):
    unit, variant = load_unit("unit07"), variant_of("unit07")
    case_id = fixedset.unvaried_cases(unit)[0]
    case = load_grading(unit).by_id(case_id)
    stale = tmp_path / f"{case_id}.json"
    text = golden.golden_path(unit, case).read_text(encoding="utf-8")
    stale.write_text(text.replace('"engineVersion": "', '"engineVersion": "old-'), "utf-8")
    assert fixedset.golden_texts(unit, variant, [case_id]) == {case_id: text}
    monkeypatch.setattr(fixedset, "golden_path", lambda unit_, case_: stale)
    assert fixedset.golden_texts(unit, variant, [case_id]) == {}
