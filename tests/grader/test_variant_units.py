"""Issue 50: units 07 and 09 have variants too, made by the same machinery as unit 08's (the
unit is data): per-student releases, grading against the student's own variant, nothing secret
in a student's zip, the fixed traces as they were."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from releasetools import assert_nothing_secret, infralab
from varianttools import SECRET, assert_own_traces, variant_of, write_secret

from grader.course import release
from grader.units import load_unit
from grader.variants import drawn, keys, store

# unit -> (the varied public trace, a public case on it)
UNITS = {
    "unit07": ("unseen", "chunked-unseen-chunk4"),
    "unit09": ("slow-readers", "backpressure-slow-readers"),
}


@pytest.mark.parametrize("unit_id", sorted(UNITS))
def test_the_builders_default_is_the_shipped_trace_byte_for_byte(unit_id):
    unit = load_unit(unit_id)
    for name, ref in unit.doc["variants"]["public"].items():
        path, function = ref.split(":")
        spec = importlib.util.spec_from_file_location(f"_t_{unit_id}", unit.unit_dir / path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        shipped = (unit.lab_dir / drawn.public_file(name)).read_text(encoding="utf-8")
        assert module.render(getattr(module, function)()) == shipped


@pytest.mark.parametrize("unit_id", sorted(UNITS))
def test_each_student_draws_their_own_traces_and_the_rest_stay(unit_id):
    unit = load_unit(unit_id)
    one, two = variant_of(unit_id, "s001"), variant_of(unit_id, "s002")
    assert assert_own_traces(unit, one, two)
    marker = json.loads((one.variant_dir / store.MARKER).read_text())
    assert marker["strictChecked"] and marker["draw"] == len(marker["refused"])


@pytest.mark.parametrize("unit_id", sorted(UNITS))
def test_release_and_grade_one_student_of_a_tiny_class(unit_id, tmp_path):
    """``release student``: a folder and zip per student, each with its own public trace and
    nothing secret; ``grade --student``: the reference passes its own variant's public case."""
    trace, case = UNITS[unit_id]
    roster, secret, out = tmp_path / "roster.csv", write_secret(tmp_path), tmp_path / "out"
    roster.write_text("id\ns001\ns002\n")
    common = ("--unit", unit_id, "--secret", str(secret))
    done = infralab("release", "student", "--roster", str(roster), "--out", str(out), *common)
    assert done.returncode == 0, done.stderr
    zips = {s: out / s / f"infra-lab-{unit_id}.zip" for s in ("s001", "s002")}
    member = f"infra-lab-{unit_id}/traces/{trace}.json"
    drawn_traces = {s: zipfile.ZipFile(z).read(member) for s, z in zips.items()}
    assert drawn_traces["s001"] != drawn_traces["s002"]
    for student, archive in zips.items():
        variant = variant_of(unit_id, student)
        assert drawn_traces[student] == (variant.lab_dir / "traces" / f"{trace}.json").read_bytes()
        assert_nothing_secret(archive, variant, common=1)
        assert_nothing_secret(archive, load_unit(unit_id), common=1)
        with zipfile.ZipFile(archive) as opened:
            blob = b"".join(opened.read(name) for name in opened.namelist())
        key = keys.variant_key(SECRET, student)
        for leaked in (SECRET, key.encode(), variant.variant_hash.encode()):
            assert leaked not in blob
    unit = load_unit(unit_id)
    submission = tmp_path / "sub"
    submission.mkdir()
    for name in unit.editable:
        (submission / name).write_bytes((unit.solutions_dir / name).read_bytes())
    graded = infralab("grade", str(submission), "--student", "s002", "--case", case, *common)
    assert graded.returncode == 0, graded.stderr
    assert f"[PASS] {case}" in graded.stdout


def test_the_student_zip_check_is_not_blind():
    """The zip check above fails on a zip that holds one of the variant's hidden traces."""
    variant = variant_of("unit07", "s001")
    path = variant.variant_dir.parent / "leaky-test.zip"
    release.build_student_zip(variant, path)
    hidden = (variant.traces_dir / "hidden" / "poisson-mix.json").read_bytes()
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("infra-lab-unit07/traces/poisson-mix.json", hidden)
    with pytest.raises(AssertionError):
        assert_nothing_secret(path, variant, common=1)
    path.unlink()


# Run in a fresh interpreter (no builder loaded yet): every course file a unit's public builders
# open while drawing, as Python's audit hook sees them.
READS = """
import json, sys
from pathlib import Path
opened = set()
sys.addaudithook(lambda e, a: e == "open" and isinstance(a[0], str) and opened.add(a[0]))
from grader.units import load_unit
from grader.variants import drawn
drawn.public_traces(load_unit(sys.argv[1]), "0" * 64)
print(json.dumps(sorted(str(Path(p).resolve()) for p in opened)))
"""


@pytest.mark.parametrize("unit_id", ["unit07", "unit08", "unit09"])
def test_the_variant_hash_covers_every_file_the_builders_read(unit_id):
    """A builder that reads a course file the variant's hash does not cover (unit 09's evict
    reads the notebook's setup and answer keys) would keep stale variants in the cache after
    that file changes; so every file under the unit's labs, starter, solutions and traces
    folders that drawing opens is among ``store._inputs`` (unit.yaml: the hash covers its doc)."""
    unit = load_unit(unit_id)
    done = subprocess.run(
        [sys.executable, "-c", READS, unit_id],
        cwd=unit.course_root, capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    folders = (unit.unit_dir, unit.lab_dir, unit.solutions_dir, unit.traces_dir)
    read = {
        Path(p)
        for p in json.loads(done.stdout.splitlines()[-1])
        if any(Path(p).is_relative_to(f.resolve()) for f in folders)
        and "__pycache__" not in p
        and Path(p).name != "unit.yaml"
    }
    assert read, "the builders read their own module at least"
    hashed = {path.resolve() for _, path in store._inputs(unit)}
    assert read <= hashed, sorted(map(str, read - hashed))
