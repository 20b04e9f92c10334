"""Issue 50: ``infralab release student --roster/--student`` and ``grade --student``."""

from __future__ import annotations

import json
import zipfile

import pytest
from releasetools import assert_nothing_secret, infralab, run_autograder
from varianttools import SECRET, variant08, write_secret

from grader.course import release
from grader.units import load_unit
from grader.variants import keys
from grader.variants.roster import RosterError, read_roster

BAD_ROSTERS = {
    "no-id-column": ("sid,name\ns1,Ann\n", "no 'id' column"),
    "duplicate": ("id\ns1\ns2\nS1\n", "line 4: id 'S1' repeats line 2"),
    "unsafe": ("id\ns1\n../s2\n", "line 3: '../s2' is not a safe id"),
    "empty-id": ("id,name\ns1,Ann\n,Bob\n", "line 3: the 'id' is empty"),
    "no-rows": ("id\n", "no students"),
}


@pytest.mark.parametrize("name", sorted(BAD_ROSTERS))
def test_a_bad_roster_is_one_clear_error_and_writes_nothing(name, tmp_path):
    text, message = BAD_ROSTERS[name]
    roster = tmp_path / "roster.csv"
    roster.write_text(text)
    with pytest.raises(RosterError, match=message.replace(".", r"\.")):
        read_roster(roster)
    out = tmp_path / "out"
    done = infralab(
        "release", "student", "--unit", "unit08", "--roster", str(roster),
        "--out", str(out), "--secret", str(write_secret(tmp_path)),
    )  # fmt: skip
    assert done.returncode == 2 and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_a_missing_secret_is_refused_before_anything_is_written(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("id\ns001\n")
    out = tmp_path / "out"
    done = infralab(
        "release", "student", "--unit", "unit08", "--roster", str(roster),
        "--out", str(out), "--secret", str(tmp_path / "none.secret"),
    )  # fmt: skip
    assert done.returncode == 2 and "none.secret does not exist" in done.stderr
    assert not out.exists()


def test_one_folder_and_zip_per_student_and_one_student_regenerated_the_same(tmp_path):
    roster, secret, out = tmp_path / "roster.csv", write_secret(tmp_path), tmp_path / "out"
    roster.write_text("id,name\ns001,Ann\nbob@uni.edu,Bob\n")
    common = ("--unit", "unit08", "--out", str(out), "--secret", str(secret))
    done = infralab("release", "student", "--roster", str(roster), *common)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["bob@uni.edu", "s001", "variants.csv"]
    zips = {s: out / s / "infra-lab-unit08.zip" for s in ("s001", "bob@uni.edu")}
    assert (out / "s001" / "infra-lab-unit08" / "simulate.py").is_file()
    first = {s: z.read_bytes() for s, z in zips.items()}
    burst = {
        s: zipfile.ZipFile(z).read("infra-lab-unit08/traces/burst.json") for s, z in zips.items()
    }
    assert burst["s001"] != burst["bob@uni.edu"]
    index = (out / "variants.csv").read_text().splitlines()
    assert index[0] == "id,variant" and len(index) == 3
    again = infralab("release", "student", "--student", "s001", *common)
    assert again.returncode == 0, again.stderr
    assert zips["s001"].read_bytes() == first["s001"]  # the TA's one command: the same bytes
    assert (out / "variants.csv").read_text().splitlines() == index
    stray = infralab("release", "student", "--roster", str(roster), "--student", "eve", *common)
    assert stray.returncode == 2 and "--student eve: not in the roster" in stray.stderr


def test_grade_finds_the_variant_in_gradescopes_metadata(tmp_path):
    """The reference, graded on Gradescope's way in (``--submission-metadata``), passes its
    student's variant; the same flags with an unsafe id are one clear error."""
    submission = tmp_path / "sub"
    submission.mkdir()
    unit = load_unit("unit08")
    for name in unit.editable:
        (submission / name).write_bytes((unit.solutions_dir / name).read_bytes())
    meta = tmp_path / "submission_metadata.json"
    meta.write_text('{"users": [{"email": "ann@uni.edu", "id": 7, "sid": "s001"}]}')
    secret = str(write_secret(tmp_path))
    args = ("grade", "--unit", "unit08", str(submission), "--secret", secret)
    done = infralab(*args, "--submission-metadata", str(meta), "--case", "static-burst")
    assert done.returncode == 0, done.stderr
    assert "[PASS] static-burst" in done.stdout
    meta.write_text('{"users": [{"sid": "a/b"}]}')
    bad = infralab(*args, "--submission-metadata", str(meta))
    assert bad.returncode == 2 and "users[0].sid: 'a/b' is not a safe id" in bad.stderr


@pytest.mark.parametrize("student", ["s001", "s002"])
def test_every_variants_student_zip_holds_nothing_secret(student, tmp_path):
    """The fixed release's guarantee, per variant: none of the variant's hidden traces or golden
    runs, none of the fixed set's, no solution or grader code, and neither the course secret
    nor the variant's key or hash."""
    variant = variant08(student)
    archive = release.build_student_zip(variant, tmp_path / release.student_zip_name(variant))
    assert_nothing_secret(archive, variant, common=1)
    assert_nothing_secret(archive, load_unit("unit08"), common=1)
    from grader.variants.keys import variant_key

    with zipfile.ZipFile(archive) as opened:
        blob = b"".join(opened.read(name) for name in opened.namelist())
    for secret in (SECRET, variant_key(SECRET, student).encode(), variant.variant_hash.encode()):
        assert secret not in blob


def test_the_gradescope_bundle_grades_each_student_against_their_own_variant(tmp_path):
    """``release autograder --roster --secret`` ships the class's variants; on Gradescope the
    student comes from submission_metadata.json. The reference passes its variant; a student
    outside the roster gets one clear line naming no hidden data. The course secret never
    leaves the TA's machine: neither it nor a student's key is in any file of the bundle."""
    roster, secret, out = tmp_path / "roster.csv", write_secret(tmp_path), tmp_path / "out"
    roster.write_text("id\ns001\n")
    done = infralab(
        "release", "autograder", "--unit", "unit08", "--out", str(out),
        "--roster", str(roster), "--secret", str(secret),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    root = tmp_path / "gs"
    with zipfile.ZipFile(out / "infra-lab-unit08-autograder.zip") as archive:
        assert not [n for n in archive.namelist() if n.startswith("solutions/")]
        assert not [n for n in archive.namelist() if "secret" in n]
        blob = b"".join(archive.read(name) for name in archive.namelist())
        archive.extractall(root / "source")
    key = keys.variant_key(SECRET, "s001")
    for leaked in (SECRET, SECRET.hex().encode(), key.encode(), bytes.fromhex(key)):
        assert leaked not in blob
    unit = load_unit("unit08")
    files = {n: (unit.solutions_dir / n).read_bytes() for n in unit.editable}
    mine = run_autograder(root, files, {"users": [{"email": "a@u.edu", "sid": "s001"}]})
    total = sum(test["max_score"] for test in mine["tests"])
    assert mine["score"] == pytest.approx(total) and total > 0
    stranger = run_autograder(root, files, {"users": [{"email": "eve@u.edu", "id": 9}]})
    assert stranger["score"] == 0.0 and "holds no variant" in stranger["output"]
    assert "traces" not in stranger["output"] and "eve" not in stranger["output"]


def test_a_batch_grades_each_submission_against_the_variant_its_name_names(tmp_path):
    """``grade --out --variants-by-name``: each submission folder is a roster id; the reference
    passes in each, and each report's inputs are its own variant's (other fingerprints)."""
    unit = load_unit("unit08")
    subs = []
    for student in ("s001", "s002"):
        folder = tmp_path / "subs" / student
        folder.mkdir(parents=True)
        for name in unit.editable:
            (folder / name).write_bytes((unit.solutions_dir / name).read_bytes())
        subs.append(str(folder))
    out, secret = tmp_path / "out", str(write_secret(tmp_path))
    done = infralab(
        "grade", "--unit", "unit08", *subs, "--out", str(out), "--variants-by-name",
        "--secret", secret, "--case", "static-burst", "--jobs", "2",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    reports = {s: json.loads((out / "reports" / f"{s}.json").read_text()) for s in ("s001", "s002")}
    assert all(r["score"] == r["maxScore"] > 0 for r in reports.values())
    inputs = {r["fingerprint"]["inputs"] for r in reports.values()}
    assert len(inputs) == 2
    plain = infralab("grade", "--unit", "unit08", *subs, "--out", str(tmp_path / "plain"),
                     "--case", "static-burst")  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    fixed = json.loads((tmp_path / "plain" / "reports" / "s001.json").read_text())
    assert fixed["fingerprint"]["inputs"] not in inputs
