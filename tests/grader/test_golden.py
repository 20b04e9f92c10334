"""Golden files: made only by `infralab golden`, and `--check` catches stale or missing ones."""

from __future__ import annotations

import json

import pytest

from grader.cases import load_grading
from grader.cli import main
from grader.course import golden
from grader.grading.grade import GradingError, grade_submission
from grader.units import load_unit


def test_repo_golden_files_are_up_to_date(capsys):
    assert main(["golden", "--unit", "unit07", "--check"]) == 0
    assert "golden files are up to date" in capsys.readouterr().out


def test_golden_records_sha_and_engine_version(unit):
    servesim = __import__("servesim")
    for path in sorted(golden.golden_dir(unit).glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert doc["generatedBy"] == "infralab golden --unit unit07"
        assert doc["engineVersion"] == servesim.ENGINE_VERSION
        assert len(doc["trace"]["sha256"]) == 64


def _states(moved):
    return {s.path.name: s.state for s in golden.check_golden(moved)}


def test_check_catches_changed_trace_and_writes_nothing(scratch_unit):
    assert set(_states(scratch_unit).values()) == {golden.GoldenState.OK}
    hidden = scratch_unit.traces_dir / "hidden" / "ties.json"
    doc = json.loads(hidden.read_text(encoding="utf-8"))
    doc["requests"][0]["inputTokens"] += 1
    hidden.write_text(json.dumps(doc), encoding="utf-8")
    before = {p: p.read_bytes() for p in (scratch_unit.traces_dir / "golden").iterdir()}
    states = _states(scratch_unit)
    stale = {name for name, state in states.items() if state is golden.GoldenState.STALE}
    assert stale == {"fcfs-ties.json", "chunked-ties-chunk2.json"}
    assert {p: p.read_bytes() for p in (scratch_unit.traces_dir / "golden").iterdir()} == before
    # grading refuses stale golden results instead of grading against them
    with pytest.raises(GradingError, match="stale"):
        grade_submission(scratch_unit, scratch_unit.solutions_dir, cases=["fcfs-ties"])
    # regenerating fixes exactly those two files
    changed = golden.write_golden(scratch_unit)
    assert {p.name for p in changed} == stale
    assert set(_states(scratch_unit).values()) == {golden.GoldenState.OK}


def test_check_reports_missing_and_orphan(scratch_unit):
    (scratch_unit.traces_dir / "golden" / "fcfs-mixed.json").unlink()
    (scratch_unit.traces_dir / "golden" / "old-case.json").write_text("{}", encoding="utf-8")
    states = _states(scratch_unit)
    assert states["fcfs-mixed.json"] is golden.GoldenState.MISSING
    assert states["old-case.json"] is golden.GoldenState.ORPHAN
    with pytest.raises(GradingError, match="missing"):
        grade_submission(scratch_unit, scratch_unit.solutions_dir, cases=["fcfs-mixed"])


def test_check_catches_hand_edited_golden(scratch_unit):
    path = scratch_unit.traces_dir / "golden" / "chunked-mixed.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["run"]["requests"][0]["tokenTimesMs"][-1] += 1
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert _states(scratch_unit)["chunked-mixed.json"] is golden.GoldenState.STALE


def test_check_exit_code_when_stale(monkeypatch, capsys, scratch_unit):
    (scratch_unit.traces_dir / "golden" / "fcfs-mixed.json").unlink()
    monkeypatch.setattr("grader.cli.grade.load_unit", lambda unit_id: scratch_unit)
    assert main(["golden", "--unit", "unit07", "--check"]) == 1
    out = capsys.readouterr().out
    assert "missing: " in out and "fcfs-mixed.json" in out
    assert not (scratch_unit.traces_dir / "golden" / "fcfs-mixed.json").exists()


def test_a_batch_with_a_missing_golden_file_stops_before_grading(scratch_unit, tmp_path):
    from grader.grading import cohort

    (scratch_unit.traces_dir / "golden" / "fcfs-mixed.json").unlink()
    submission = tmp_path / "alice"
    submission.mkdir()
    (submission / "policies.py").write_bytes(
        (scratch_unit.solutions_dir / "policies.py").read_bytes()
    )
    out = tmp_path / "out"
    with pytest.raises(cohort.BatchError, match="golden file for case 'fcfs-mixed' is missing"):
        cohort.grade_batch(scratch_unit, [submission], out, progress=False)
    assert not list((out / "reports").glob("*.json"))  # no submission scored against it


def test_build_all_in_parallel_gives_each_case_its_own_golden_document(unit):
    """The forked workers and the shared runs change nothing: every document equals the one
    ``build_golden`` makes for its case alone."""
    cases = list(load_grading(unit).cases)
    assert golden.build_all(unit, cases) == [golden.build_golden(unit, c) for c in cases]


def test_cases_that_differ_only_in_what_they_ask_share_one_reference_run(monkeypatch):
    """Unit 09's measure cases ask different questions of the same run: each distinct setup
    (trace, transform, policy, parameters, device, queue cap) runs once."""
    unit = load_unit("unit09")
    cases = [c for c in load_grading(unit).cases if c.trace in ("tail-overload", "tail-none")]
    calls, real = [], golden.reference.run_reference

    def counted(*args, **kwargs):
        calls.append(args[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(golden.reference, "run_reference", counted)
    monkeypatch.setattr(golden.os, "cpu_count", lambda: 1)  # in this process, to count calls
    docs = golden.build_all(unit, cases)
    setups = {(c.setup_key, c.transform) for c in cases}
    assert len(calls) == len(setups) < len(cases)
    assert [d["case"] for d in docs] == [c.spec for c in cases]
