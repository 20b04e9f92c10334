"""Issue 50: the notebook's numbers per student, and nbgrader grading each student's notebook
against their own variant (``grader.variants.nbkeys``, ``nbautograde.SandboxedAutograde``)."""

from __future__ import annotations

import json
import re
import zipfile

import nbformat
import pytest
from kernelhost import NEEDS_KERNEL
from labtools import copy_lab
from releasetools import infralab
from varianttools import (
    SECRET,
    expected_key,
    notebook_answers,
    notebook_cells,
    variant08,
    write_secret,
)

from grader.course import nbcheck, nbgrader_course
from grader.course.nbautograde import SandboxedAutograde
from grader.units import UnitError, load_unit
from grader.variants import drawn, nbkeys

UNIT = load_unit("unit08")
SOURCE = UNIT.unit_dir / "notebook" / "unit08.ipynb"
D1_CELLS = ("setup", "d1_run", "d1_answer", "d1_counts", "d1_rates", "d1_tpot")
D1_CHECKS = ("d1_counts", "d1_rates", "d1_tpot")


def expected(student: str, secret) -> dict:
    return expected_key("unit08", "goodput", student, secret)


def notebook_d1(lab) -> dict:
    return notebook_answers(SOURCE, lab, ("setup", "d1_run", "d1_answer"), "d1")


D2_CELLS = ("setup", "d2_closed_run", "d2_rate_answer", "d2_open_run", "d2_answer")
D2_ANSWER = (
    '{"rate": d2_rate, "loops": d2_loops, "open_above_p99": d2_open_above, "little": d2_little}'
)


def notebook_d2_d3(lab) -> tuple[dict, dict]:
    """Deliverables 2 and 3 as the notebook's own cells compute them in ``lab``, in the
    answer keys' shape (``protocol`` without its replication count, ``sweep``)."""
    got = notebook_answers(SOURCE, lab, (*D2_CELLS, "d3_run", "d3_answer"), f"[{D2_ANSWER}, d3]")
    return got[0], got[1]


def test_each_students_lab_computes_their_own_notebook_numbers(tmp_path):
    """Two students' released lab folders: the notebook's deliverable 1 run in each gives that
    student's numbers, equal to the key the project's command computes on their traces, and
    different between the two (their ``burst`` differs)."""
    roster, secret, out = tmp_path / "roster.csv", write_secret(tmp_path), tmp_path / "out"
    roster.write_text("id\ns001\ns002\n")
    done = infralab(
        "release", "student", "--unit", "unit08", "--roster", str(roster), "--out", str(out),
        "--secret", str(secret),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = {}
    for student in ("s001", "s002"):
        lab = out / student / "infra-lab-unit08"
        for name in UNIT.editable:  # the reference in the student's place
            (lab / name).write_bytes((UNIT.solutions_dir / name).read_bytes())
        got[student] = notebook_d1(lab)
        assert got[student] == expected(student, secret)
    fixed = nbcheck.answer_key(UNIT, "goodput")
    assert got["s001"] != got["s002"] and fixed not in got.values()
    one, two = got["s001"], got["s002"]
    differing = {(p, f) for p in fixed for f in fixed[p] if one[p][f] != two[p][f]}
    assert ("paged", "submitted") in differing  # different traces, different counts
    # deliverables 2 and 3 (their sweeps run in one student's lab only, to keep this test short)
    d2, d3 = notebook_d2_d3(out / "s001" / "infra-lab-unit08")
    key = expected_key("unit08", "protocol", "s001", secret)
    assert key.pop("replications") == 3 and d2 == key
    assert d3 == expected_key("unit08", "sweep", "s001", secret)


def test_two_students_get_their_own_loop_and_sweep_keys(tmp_path):
    """Deliverables 2 and 3 run the notebook's protocols, whose seeds each variant draws
    again: two students' keys differ from each other's and from the fixed set's, in the
    figures themselves (rates, tails, goodput), not only in which cells are known."""
    secret = write_secret(tmp_path)
    for case in ("protocol", "sweep"):
        fixed = nbcheck.answer_key(UNIT, case)
        one, two = (expected_key("unit08", case, s, secret) for s in ("s001", "s002"))
        assert len({json.dumps(k, sort_keys=True) for k in (fixed, one, two)}) == 3, case
        if case == "protocol":
            assert len({k["rate"]["measured"] for k in (fixed, one, two)}) == 3
            assert len({k["loops"]["closed"]["p99_ttft"] for k in (fixed, one, two)}) == 3
        else:
            goodput = {
                k["target"]["points"]["large-paged"]["goodput_per_s"] for k in (fixed, one, two)
            }
            assert len(goodput) == 3


def test_a_variants_notebook_protocols_differ_from_the_fixed_ones_only_in_their_seeds():
    """``variants.protocols``: every field but ``seeds`` is the shipped protocol's; the seeds
    are as many, distinct, none a seed the lab ships, and each student's own."""
    assert drawn.protocol_names(UNIT) == ("notebook-loops", "notebook-sweep")
    for name in drawn.protocol_names(UNIT):
        fixed = json.loads((UNIT.lab_dir / "protocols" / f"{name}.json").read_text())
        drawn_seeds = []
        for variant in (variant08("s001"), variant08("s002")):
            doc = json.loads((variant.lab_dir / "protocols" / f"{name}.json").read_text())
            seeds = doc.pop("seeds")
            assert doc == {k: v for k, v in fixed.items() if k != "seeds"}
            assert len(set(seeds)) == len(seeds) == len(fixed["seeds"])
            assert min(seeds) >= drawn.PROTOCOL_SEED_FLOOR > max(fixed["seeds"])
            drawn_seeds.append(seeds)
        assert drawn_seeds[0] != drawn_seeds[1], name


def test_every_notebook_key_of_unit08_is_the_variants_own():
    """``READS`` of unit 08: the goodput key reads ``burst``, the loops and the sweep read
    their protocols, whose seeds a variant redraws: all three are computed on the variant. The
    class's shared folder lacks every varied file, protocols included."""
    one = variant08("s001")
    for case in ("goodput", "protocol", "sweep"):
        assert nbkeys.key_unit(one, case) is one, case
    assert nbkeys.key_unit(UNIT, "sweep") is UNIT  # the fixed set is left as it is
    folder = nbkeys.shared_unit(UNIT).lab_dir
    for rel in (
        "traces/burst.json",
        "traces/tenants.json",
        *(f"protocols/{name}.json" for name in ("notebook-loops", "notebook-sweep")),
    ):
        assert not (folder / rel).exists(), rel
    assert (folder / "traces" / "azure-conv-slice.json").is_file()
    assert (folder / "protocols" / "lesson.json").is_file()


def test_a_key_that_forgets_a_varied_trace_fails_instead_of_reading_the_fixed_one():
    """Had ``READS`` left ``traces/burst.json`` (or a protocol) out of a key, the key would be
    computed on the shared folder, where that file is missing: an error, not the fixed file's
    numbers."""
    shared = nbkeys.shared_unit(UNIT)
    keys = nbcheck.answer_keys(UNIT)
    for case in ("goodput", "protocol", "sweep"):  # burst, or the protocol, is not there
        with pytest.raises((OSError, UnitError, ValueError)):
            keys[case](shared)


def test_overlay_puts_the_variants_public_files_and_keeps_the_students_own(tmp_path):
    lab = copy_lab(tmp_path / "lab", False, UNIT)
    (lab / "policies.py").write_text("# the student's file\n")
    written = nbkeys.overlay(variant08("s001"), lab)
    assert nbkeys.varied_files(UNIT) <= set(written)
    assert {"protocols/notebook-loops.json", "protocols/notebook-sweep.json"} <= set(written)
    assert all(not w.endswith(".py") for w in written)
    for rel in written:
        assert (lab / rel).read_bytes() == (variant08("s001").lab_dir / rel).read_bytes()
    assert (lab / "policies.py").read_text() == "# the student's file\n"
    assert nbkeys.overlay(UNIT, lab) == []


def test_autograde_finds_the_variant_only_with_the_configured_secret(tmp_path):
    resources = {"nbgrader": {"assignment": "unit08", "student": "s001"}}
    secret = write_secret(tmp_path)
    graded = SandboxedAutograde(variant_secret=str(secret)).graded_unit(resources)
    assert graded.lab_dir == variant08("s001").lab_dir
    assert SandboxedAutograde().graded_unit(resources).lab_dir == UNIT.lab_dir
    (tmp_path / "short").write_text("abc")
    with pytest.raises(UnitError, match="fewer than 16"):
        SandboxedAutograde(variant_secret=str(tmp_path / "short")).graded_unit(resources)


def test_release_nbgrader_names_the_secret_in_the_config_and_puts_it_nowhere_else(tmp_path):
    secret, course = write_secret(tmp_path), tmp_path / "course"
    nbgrader_course.release_nbgrader(UNIT, course, generate=False, secret=secret)
    config = (course / nbgrader_course.MANAGED_CONFIG).read_text()
    assert f"c.SandboxedAutograde.variant_secret = {str(secret)!r}" in config
    staged = [p for p in course.rglob("*") if p.is_file()]
    assert staged and not [p for p in staged if SECRET in p.read_bytes()]
    short = tmp_path / "short"
    short.write_text("abc")
    with pytest.raises(UnitError, match="fewer than 16"):
        nbgrader_course.release_nbgrader(UNIT, tmp_path / "other", generate=False, secret=short)
    assert not (tmp_path / "other").exists()


def autograde(tmp_path, student: str, secret, answer: str | None = None) -> dict[str, str]:
    """Autograde deliverable 1's cells as nbgrader would for ``student`` (the reference's
    files in the notebook's folder); ``answer`` replaces the answer cell. Each graded cell's
    verdict."""
    folder = copy_lab(tmp_path / f"{student}-{answer is not None}", True, UNIT)
    nb = nbformat.v4.new_notebook(cells=notebook_cells(SOURCE, *D1_CELLS))
    if answer is not None:
        nb.cells[D1_CELLS.index("d1_answer")].source = answer
    runner = SandboxedAutograde(timeout=300, variant_secret=str(secret) if secret else "")
    resources = {
        "nbgrader": {"assignment": "unit08", "student": student},
        "metadata": {"path": str(folder)},
    }
    nb, _ = runner.preprocess(nb, resources)
    verdicts = {}
    for cell in nb.cells:
        grade_id = cell.metadata["nbgrader"]["grade_id"]
        if grade_id in D1_CHECKS:
            last = cell.outputs[-1]
            verdicts[grade_id] = (last.get("text") or last.get("evalue")).strip()
    return verdicts


@NEEDS_KERNEL
def test_a_students_numbers_pass_for_them_and_fail_for_another_student(tmp_path):
    """The notebook's own solution passes for each student (it runs on their traces); the
    numbers s001 hands in, typed in, pass for s001 and fail for s002 and for the fixed set."""
    secret = write_secret(tmp_path)
    passed = "评分器核对:通过"
    for student in ("s001", "s002"):
        assert set(autograde(tmp_path, student, secret).values()) == {passed}, student
    typed = f"d1 = {expected('s001', secret)!r}"
    assert set(autograde(tmp_path, "s001", secret, typed).values()) == {passed}
    for student, key in (("s002", secret), ("s003", None)):
        failed = autograde(tmp_path, student, key, typed)
        assert passed not in failed.values(), (student, failed)
        assert all("你的答案是" in text for text in failed.values())


def hidden_data(variant) -> list[str]:
    """What a variant's hidden traces hold that no student view may show: the ids of their
    requests, their arrival times and their request counts."""
    found = []
    for name in drawn.hidden_names(UNIT):
        doc = json.loads((variant.traces_dir / "hidden" / f"{name}.json").read_text())
        found += [r["id"] for r in doc["requests"] if len(r["id"]) >= 4]
        found += [f"{r['arrivalMs']}" for r in doc["requests"] if r["arrivalMs"] >= 100]
        found.append(f"{len(doc['requests'])} requests")
    return found


def test_the_policy_cells_feedback_on_a_variant_holds_no_hidden_data(tmp_path):
    """The notebook's policy cell grades on the student's variant's hidden cases; its text
    (what the feedback shows) names no hidden request, time or count of that variant."""
    from grader.traces.mutants import list_mutants

    variant = variant08("s002")
    mutant = next(m for m in list_mutants(UNIT) if m.name.startswith("measure/"))
    files = []
    for name, data in mutant.submission(UNIT).files.items():
        (tmp_path / name).write_bytes(data)
        files.append(tmp_path / name)
    report = nbcheck.grade_policies(variant, files)
    assert 0 < report["score"] < report["maxScore"]
    text = report["text"]
    leaks = [item for item in hidden_data(variant) if re.search(rf"\b{re.escape(item)}\b", text)]
    assert not leaks, leaks[:5]


def test_release_nbgrader_with_a_roster_gives_each_student_their_own_traces(tmp_path):
    """``release nbgrader --secret --roster``: one zip per student of the generated student
    version, with that student's own public traces and the same notebook; no secret in any."""
    roster, secret, course = tmp_path / "roster.csv", write_secret(tmp_path), tmp_path / "c"
    roster.write_text("id\ns001\ns002\n")
    alone = infralab(
        "release", "nbgrader", "--unit", "unit08", "--course", str(course), "--roster", str(roster)
    )
    assert alone.returncode == 2 and "--roster needs --secret" in alone.stderr
    assert not course.exists()
    done = infralab(
        "release", "nbgrader", "--unit", "unit08", "--course", str(course), "--secret",
        str(secret), "--roster", str(roster),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shared = course / "release" / "unit08"
    bursts = set()
    for student in ("s001", "s002"):
        path = course / "release" / "students" / student / "infra-lab-unit08-nbgrader.zip"
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            read = archive.read
            burst = read("infra-lab-unit08/traces/burst.json")
            assert burst == (variant08(student).lab_dir / "traces" / "burst.json").read_bytes()
            assert read("infra-lab-unit08/unit08.ipynb") == (shared / "unit08.ipynb").read_bytes()
            assert not [n for n in names if SECRET in read(n)]
        bursts.add(burst)
    assert len(bursts) == 2
