"""Issue 50: a batch with variants makes each variant ready in the worker that grades it
(``cohort_workers._prepare``), so the parent does not warm every variant one after another."""

from __future__ import annotations

from varianttools import variant08

from grader.grading import cohort, grade
from grader.units import load_unit
from grader.variants.store import VariantUnit

UNIT = load_unit("unit08")


def _class(root, names):
    folders = []
    for name in names:
        folder = root / name
        folder.mkdir(parents=True)
        for file in UNIT.editable:
            (folder / file).write_bytes((UNIT.solutions_dir / file).read_bytes())
        folders.append(folder)
    return folders


def test_each_variant_is_warmed_in_its_worker_and_a_broken_one_is_an_error_row(
    tmp_path, monkeypatch
):
    """The parent warms the fixed unit only; s001's variant, made unready on purpose, is an
    error row (the grader's failure, retried), never a score; s002 is graded in full."""
    warmed, real_warm = [], grade.warm

    def warm(unit, cases=None):
        warmed.append(unit.variant_hash if isinstance(unit, VariantUnit) else "fixed")
        if isinstance(unit, VariantUnit) and unit.lab_dir == variant08("s001").lab_dir:
            raise grade.GradingError("golden file for case 'x' is missing")
        return real_warm(unit, cases)

    monkeypatch.setattr(grade, "warm", warm)
    monkeypatch.setattr(cohort, "warm", warm)
    result = cohort.grade_batch(
        UNIT, _class(tmp_path / "subs", ["s001", "s002"]), tmp_path / "out", jobs=2,
        cases=["static-burst"], progress=False, variant_of=variant08,
    )  # fmt: skip
    assert warmed == ["fixed"]  # in the parent: the variants are warmed in the workers
    assert result.failed == ["s001"] and result.graded == ["s002"]
    rows = dict(
        line.split(",", 1) for line in (tmp_path / "out" / "scores.csv").read_text().splitlines()
    )
    assert rows["s001"].startswith(",") and "the student's variant" in rows["s001"]
    assert rows["s002"].startswith("2")
