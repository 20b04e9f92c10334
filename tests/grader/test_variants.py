"""Issue 50: per-student variants drawn from specs, graded against the student's own goldens."""

from __future__ import annotations

import copy
import json
import random

import pytest
from varianttools import SECRET, assert_own_traces, variant08

from grader.cases import load_grading, trace_path
from grader.course import golden
from grader.course.golden import GoldenState
from grader.grading.grade import grade_submission
from grader.grading.inprocess import run_in_process
from grader.grading.submission import Submission
from grader.schema import SchemaError, validate
from grader.traces.errors import SpecError
from grader.units import Unit, UnitError, load_unit
from grader.variants import drawn, identity, keys
from grader.variants.keys import SecretError

UNIT08 = load_unit("unit08")


def test_the_key_is_a_keyed_hash_of_the_id():
    one, again = keys.variant_key(SECRET, "s001"), keys.variant_key(SECRET, "s001")
    assert one == again and len(one) == 64
    assert keys.variant_key(SECRET, "s002") != one
    assert keys.variant_key(SECRET + b"x", "s001") != one  # the secret, not the id alone


def test_a_missing_or_short_secret_is_one_clear_error(tmp_path):
    with pytest.raises(SecretError, match=r"does not exist.*secrets.token_hex"):
        keys.load_secret(tmp_path / "nowhere.secret")
    (tmp_path / "short").write_text("abc\n")
    with pytest.raises(SecretError, match="fewer than 16"):
        keys.load_secret(tmp_path / "short")


def test_the_same_id_draws_byte_identical_traces():
    key = keys.variant_key(SECRET, "s001")
    assert drawn.public_traces(UNIT08, key) == drawn.public_traces(UNIT08, key)
    assert drawn.hidden_traces(UNIT08, key) == drawn.hidden_traces(UNIT08, key)


def test_a_variants_protocols_keep_all_but_their_seeds_on_every_draw():
    """``variants.protocols`` over 200 keys: the same key, the same file; every other field
    the shipped protocol's; seeds as many, distinct, never below the floor (so never a seed
    the lab ships); and no two keys with the same seeds."""
    seen = set()
    for n in range(200):
        key = keys.variant_key(SECRET, f"p{n:03d}")
        texts = drawn.protocols(UNIT08, key)
        assert texts == drawn.protocols(UNIT08, key)
        assert set(texts) == {"notebook-loops", "notebook-sweep"}
        for name, text in texts.items():
            doc = json.loads(text)
            fixed = json.loads((UNIT08.lab_dir / "protocols" / f"{name}.json").read_text())
            seeds = doc.pop("seeds")
            assert doc == {k: v for k, v in fixed.items() if k != "seeds"}
            assert len(set(seeds)) == len(seeds) == len(fixed["seeds"])
            assert min(seeds) >= drawn.PROTOCOL_SEED_FLOOR > max(fixed["seeds"])
            seen.add((name, tuple(seeds)))
    assert len(seen) == 400


def test_a_protocol_that_cannot_be_drawn_is_one_clear_error():
    doc = copy.deepcopy(UNIT08.doc)
    doc["variants"]["protocols"] = ["notebook-loops", "nowhere"]
    unit = Unit(UNIT08.id, doc, UNIT08.course_root, UNIT08.config_dir)
    with pytest.raises(UnitError, match=r"variants\.protocols: nowhere: .*nowhere\.json"):
        drawn.protocols(unit, keys.variant_key(SECRET, "s001"))


@pytest.mark.parametrize("value", ["notebook-loops", [""], [3], ["../secret"]])
def test_variants_protocols_must_list_protocol_names(value):
    doc = copy.deepcopy(UNIT08.doc)
    doc["variants"]["protocols"] = value
    with pytest.raises(SchemaError, match=r"'variants\.protocols' must list protocol names"):
        validate(doc, "unit", "unit.yaml")


def test_each_student_draws_their_own_traces_and_the_fixed_set_stays():
    one, two = variant08("s001"), variant08("s002")
    kept = assert_own_traces(UNIT08, one, two)
    assert kept == {"lockstep.json"}  # a construction, not a sample: every variant has it as is
    assert one.variant_hash != two.variant_hash


def test_a_variants_golden_files_are_the_reference_on_its_own_traces():
    """``golden --check`` of the variant recomputes every file from the reference: all fresh,
    and a case on a varied trace has another run than the fixed set's golden."""
    variant = variant08("s001")
    assert {s.state for s in golden.check_golden(variant)} == {GoldenState.OK}
    case = load_grading(UNIT08).by_id("paged-kv-b512-m96")
    assert trace_path(variant, case).parent == variant.traces_dir / "hidden"
    mine, fixed = golden.load_golden(variant, case), golden.load_golden(UNIT08, case)
    assert mine["trace"]["sha256"] != fixed["trace"]["sha256"]
    assert mine["run"] != fixed["run"]


def test_vary_draws_only_what_the_spec_allows():
    spec = {
        "name": "t",
        "generate": {
            "seed": 1,
            "count": 5,
            "arrivals": {"process": "poisson", "ratePerMs": 0.1},
            "inputTokens": {"dist": "constant", "value": 4},
            "outputTokens": {"dist": "constant", "value": 2},
        },
        "vary": {
            "count": {"min": 4, "max": 8, "step": 2},
            "arrivals.ratePerMs": {"values": [0.2, 0.3]},
        },
    }
    seen = {
        (d["generate"]["count"], d["generate"]["arrivals"]["ratePerMs"], d["generate"]["seed"])
        for d in (drawn.draw_spec(spec, keys.variant_key(SECRET, f"s{n}"), "t") for n in range(40))
    }
    assert {c for c, _, _ in seen} == {4, 6, 8} and {r for _, r, _ in seen} == {0.2, 0.3}
    assert len({s for _, _, s in seen}) == 40 and "vary" not in drawn.draw_spec(spec, "k", "t")
    bad = dict(spec, vary={"arrivals.burst": {"values": [1]}})
    with pytest.raises(SpecError, match=r"vary names 'arrivals\.burst'"):
        drawn.draw_spec(bad, "k", "t")
    value = drawn.draw_value({"min": 0.01, "max": 0.02}, random.Random(3), "t")
    assert 0.01 <= value <= 0.02


def test_the_student_is_found_in_gradescopes_metadata(tmp_path):
    path = tmp_path / "submission_metadata.json"
    users = [{"email": "ann@uni.edu", "id": 1234, "name": "Ann", "sid": "s001"}]
    path.write_text(json.dumps({"id": 1, "users": users}))
    assert identity.student_from_metadata(path) == "s001"
    path.write_text(json.dumps({"users": [{"email": "ann@uni.edu", "id": 1234, "sid": ""}]}))
    assert identity.student_from_metadata(path) == "ann@uni.edu"
    for doc in ({}, {"users": []}, {"users": [{"id": 3}]}, {"users": [{"sid": "../x"}]}):
        path.write_text(json.dumps(doc))
        with pytest.raises(UnitError, match="submission metadata"):
            identity.student_from_metadata(path)


def test_the_reference_passes_its_variant_and_the_fixed_sets_run_does_not():
    """Graded against the variant's own goldens: the reference earns every point there, and a
    submission that only copies the fixed set's public results (burst at the lab's seed) does
    not pass the variant's public burst case."""
    variant = variant08("s001")
    cases = ["static-burst", "paged-kv-b512-m96", "continuous-steady-k4"]
    files = {n: (UNIT08.solutions_dir / n).read_bytes() for n in UNIT08.editable}
    report = grade_submission(
        variant, Submission(files, source="t"), cases=cases, runner=run_in_process
    )
    assert [c.status.value for c in report.cases] == ["passed"] * 3

    def fixed_trace(lab_dir, files, path, argv, limits=None, **extra):  # the fixed set's run
        return run_in_process(lab_dir, files, UNIT08.lab_dir / "traces" / path.name, argv, limits)

    copied = grade_submission(
        variant, Submission(files, source="t"), cases=["static-burst"], runner=fixed_trace
    )
    assert copied.cases[0].status.value != "passed"


def test_the_leaderboard_compares_students_on_different_variants_fairly():
    """Two students with the same share of their own reference's goodput rank equal on the
    relative entry, whatever their variants' raw goodput; a better share ranks higher."""
    from grader.grading.leaderboard import LEADERBOARD_GOODPUT, LEADERBOARD_RELATIVE, entries

    def board(goodput, reference):
        metrics = {"goodput": goodput, "referenceGoodput": reference, "goodputMax": 100.0}
        return {e["name"]: e["value"] for e in entries([metrics, dict(metrics)])}

    easy, hard, better = board(8.0, 10.0), board(4.0, 5.0), board(4.5, 5.0)
    assert easy[LEADERBOARD_GOODPUT] > hard[LEADERBOARD_GOODPUT]  # raw: the easier variant
    assert easy[LEADERBOARD_RELATIVE] == hard[LEADERBOARD_RELATIVE] == 80.0
    assert better[LEADERBOARD_RELATIVE] == 90.0
    invalid = entries([{"goodput": 0.0, "p99TtftMs": None}])
    assert {e["name"]: e["value"] for e in invalid}[LEADERBOARD_RELATIVE] == 0.0


def test_the_reference_scores_100_percent_of_its_own_variants_reference():
    variant = variant08("s002")
    files = {n: (UNIT08.solutions_dir / n).read_bytes() for n in UNIT08.editable}
    cases = ["challenge-burst", "challenge-steady"]
    report = grade_submission(variant, Submission(files, source="t"), cases=cases,
                              runner=run_in_process)  # fmt: skip
    board = {e["name"]: e["value"] for e in report.leaderboard()}
    assert board["goodput vs reference (%)"] == 100.0


def test_a_variants_reference_verdicts_are_kept_and_recalled_only_by_the_same_grader(tmp_path):
    """Judged when the variant is made, recalled for a batch: a run file equal to the
    reference's takes the kept verdict (the same report), and a file judged by another grader
    version is not recalled."""
    import pickle

    from grader.grading import verdict_memo
    from grader.variants import verdicts

    variant = variant08("s001")
    files = {n: (UNIT08.solutions_dir / n).read_bytes() for n in UNIT08.editable}
    cases = ["static-burst", "paged-kv-b512-m96"]

    def grade():
        report = grade_submission(variant, Submission(files, source="t"), cases=cases,
                                  runner=run_in_process)  # fmt: skip
        return [(c.id, c.status, c.points) for c in report.cases]

    plain = grade()
    try:
        assert variant.remember_reference() and len(verdict_memo._MEMO) >= len(cases)
        assert grade() == plain
    finally:
        verdict_memo.forget()
    doc = pickle.loads((variant.variant_dir / verdicts.FILE).read_bytes())
    copy = tmp_path / "v"
    copy.mkdir()
    (copy / verdicts.FILE).write_bytes(pickle.dumps(dict(doc, grader="another")))
    moved = type(variant)(variant.id, variant.doc, variant.course_root, None, copy, "x")
    assert verdicts.recall(moved) is False and not verdict_memo._MEMO
