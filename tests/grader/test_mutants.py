"""The mutant corpus: each mutant loses points on a hidden case, with the exact failure kind."""

from __future__ import annotations

import pytest

from grader.cli import main
from grader.course.labels import hidden_labels
from grader.grading.grade import KEYED_NOTE, Status, grade_submission
from grader.traces.mutants import list_mutants

# mutant -> the kind of failure it gets on every case that catches it
EXPECTED = {
    "chunk_off_by_one": Status.WRONG_SCHEDULE,
    "chunk_tokens_float": Status.CRASH,  # the engine stops it: its answer breaks the contract
    "decodes_sequences": Status.CRASH,
    "prefills_by_str_of_sequence": Status.CRASH,
    "returns_batch_and_size": Status.CRASH,
    "tracks_progress_in_view": Status.CRASH,
    "decode_one_at_a_time": Status.WRONG_SCHEDULE,
    "decode_skips_newest": Status.WRONG_SCHEDULE,
    "fcfs_interleaves_decode": Status.WRONG_SCHEDULE,
    "hardcoded_chunk": Status.WRONG_SCHEDULE,
    "keyed_to_public_traces": Status.WRONG_SCHEDULE,
    "lifo_waiting": Status.WRONG_SCHEDULE,
    "mixed_batch": Status.WRONG_SCHEDULE,
    "one_token_decode": Status.CRASH,
    "prefill_all_waiting": Status.WRONG_SCHEDULE,
    "prefill_before_decode": Status.WRONG_SCHEDULE,
    "shortest_prompt_first": Status.WRONG_SCHEDULE,
    "ties_by_id": Status.WRONG_SCHEDULE,
}


def test_corpus_is_listed(unit):
    names = {m.name for m in list_mutants(unit)}
    assert names == set(EXPECTED)
    assert len(names) >= 8
    assert all(m.summary for m in list_mutants(unit))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_mutant_loses_points_on_a_hidden_case(mutant_results, name):
    result = mutant_results[name]
    assert result.killed_by_hidden, f"{name} survives every hidden case"
    assert result.report.score < result.report.max_score
    statuses = {result.status(case) for case in result.killed_by_hidden}
    assert statuses == {EXPECTED[name]}


def test_keyed_answer_passes_public_but_not_relabelled(mutant_results):
    result = mutant_results["keyed_to_public_traces"]
    public = [c for c in result.report.cases if not c.hidden]
    assert all(c.status is Status.PASSED for c in public)
    assert result.status("chunked-mixed-relabelled") is Status.WRONG_SCHEDULE
    relabelled = next(c for c in result.report.cases if c.id == "chunked-mixed-relabelled")
    assert KEYED_NOTE in relabelled.feedback
    # a policy that is simply wrong everywhere gets no such note
    lifo = mutant_results["lifo_waiting"].report.cases
    assert all(KEYED_NOTE not in c.feedback for c in lifo)


def test_ties_mutant_is_caught_only_by_the_ties_trace(mutant_results):
    assert set(mutant_results["ties_by_id"].killed_by) == {"fcfs-ties", "chunked-ties-chunk2"}


def test_sandboxed_grade_of_a_mutant_names_hidden_cases_for_staff_only(unit, tmp_path):
    mutant = next(m for m in list_mutants(unit) if m.name == "ties_by_id")
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "policies.py").write_bytes(mutant.path.read_bytes())
    report = grade_submission(
        unit, folder, cases=["fcfs-mixed", "fcfs-ties", "chunked-ties-chunk2"]
    )
    assert report.killed_by() == ["fcfs-ties", "chunked-ties-chunk2"]
    label = hidden_labels(unit, ["fcfs-ties"])["fcfs-ties"]
    staff = report.text(staff=True)
    assert f"[FAIL] fcfs-ties [{label}] (hidden, part 1 (fcfs))" in staff
    student = report.text()
    assert f"[FAIL] {label} (hidden, part 1 (fcfs))" in student
    assert "[PASS] fcfs-mixed" in student
    assert "ties" not in student


def test_mutants_command_reports_matrix(capsys):
    assert main(["trace", "mutants", "--unit", "unit07", "--mutant", "ties_by_id", "--strict"]) == 0
    out = capsys.readouterr().out
    assert "ties_by_id" in out
    assert "killed by hidden: fcfs-ties, chunked-ties-chunk2" in out


def test_mutants_command_warns_on_survivor(capsys, monkeypatch, unit):
    from grader.traces import mutants

    real = mutants.kill_matrix

    def only_public(unit_, selected, **kwargs):
        results = real(unit_, selected, **kwargs)
        for r in results:
            r.report.cases = [c for c in r.report.cases if not c.hidden]
        return results

    monkeypatch.setattr(mutants, "kill_matrix", only_public)
    code = main(["trace", "mutants", "--unit", "unit07", "--mutant", "ties_by_id", "--strict"])
    assert code == 1
    assert "warning: mutant ties_by_id survives every hidden case" in capsys.readouterr().err


def test_mutants_in_parallel_get_the_same_matrix_in_the_same_order(unit):
    from grader.traces.mutants import kill_matrix

    chosen = [m for m in list_mutants(unit) if m.name in ("ties_by_id", "lifo_waiting")]
    finished = []
    parallel = kill_matrix(unit, chosen, jobs=2, on_done=lambda m: finished.append(m.name))
    serial = kill_matrix(unit, chosen, jobs=1)
    assert sorted(finished) == sorted(m.name for m in chosen)
    assert [r.mutant.name for r in parallel] == [m.name for m in chosen]
    assert [[c.status for c in r.report.cases] for r in parallel] == [
        [c.status for c in r.report.cases] for r in serial
    ]


def test_mutants_command_prints_its_time_and_no_progress_off_a_terminal(capsys):
    argv = ["trace", "mutants", "--unit", "unit07", "--jobs", "2"]
    assert main([*argv, "--mutant", "ties_by_id", "--mutant", "lifo_waiting"]) == 0
    captured = capsys.readouterr()
    assert "2 mutants graded in " in captured.out and "(2 at once)" in captured.out
    assert "\r" not in captured.err and "grading" not in captured.err


def test_mutants_command_refuses_jobs_below_one(capsys):
    assert main(["trace", "mutants", "--unit", "unit07", "--jobs", "0"]) != 0
    assert "--jobs 0: must be at least 1" in capsys.readouterr().err
