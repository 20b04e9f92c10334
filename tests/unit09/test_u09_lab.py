"""The unit 09 lab folder as shipped: generated files in step, red on stubs and green solved
from python3 alone, exercise 31.11's event log and invariants, the exercises dispatcher, and the
hidden traces that the cases need (shared prefixes, cancellations, a pool that evicts)."""

from __future__ import annotations

import json
import subprocess
import sys

from labtools import copy_lab

from grader.cases import load_grading
from grader.course import starter
from grader.units import load_unit

UNIT09 = load_unit("unit09")


def lab_python(lab, *args: str, timeout: float = 300):
    """Run a lab script with python3 alone: ``-S`` keeps every installed package out of reach."""
    return subprocess.run(
        [sys.executable, "-S", *args], cwd=lab, capture_output=True, text=True, timeout=timeout
    )


def test_starter_files_are_in_step_with_solutions_and_unit_yaml():
    stale = starter.stale_files(UNIT09)
    assert not stale, f"run `infralab starter sync --unit unit09`; stale: {stale}"


def test_stubs_name_every_function_and_keep_the_given_helpers():
    stub = (UNIT09.lab_dir / "policies.py").read_text(encoding="utf-8")
    assert "### BEGIN SOLUTION" not in stub
    for function in ("cancel_aware", "grow_holders", "prefix_paged", "prefix_admit"):
        assert f'raise NotImplementedError("{function}() is not implemented yet")' in stub
    for given in ("def pool_copy(", "def grow_pages(", "def grow_on(", "def start_on("):
        assert given in stub


def test_public_tests_red_on_stubs_from_python3_alone(tmp_path):
    done = lab_python(copy_lab(tmp_path / "lab", False, UNIT09), "run_tests.py")
    assert done.returncode == 1, done.stdout + done.stderr
    for function in ("cancel_aware", "prefix_paged", "prefix_admit"):
        assert f"{function}() in policies.py is not implemented yet" in done.stdout
    assert done.stdout.splitlines()[-1].endswith(" failed, 0 passed")


def test_public_tests_green_with_solutions_and_exercise_31_11_from_python3_alone(tmp_path):
    lab = copy_lab(tmp_path / "lab", True, UNIT09)
    done = lab_python(lab, "run_tests.py")
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.splitlines()[-1]
    assert last.endswith(" passed") and "failed" not in last
    shown = lab_python(lab, "exercises.py", "31.11")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    out = shown.stdout
    for claim in (
        "r is terminal (cancelled): holds",
        "no terminated request is scheduled: holds",
        "released at most once",
        "all invariants hold",
    ):
        assert claim in out
    assert "hit     request s page 1" in out and "release request r page 1" in out
    assert "FAILS" not in out


def test_exercises_dispatcher_names_a_missing_or_unknown_exercise(tmp_path):
    lab = copy_lab(tmp_path / "lab", False, UNIT09)
    for module in ("ex31_10.py", "ex31_13.py"):
        (lab / module).unlink(missing_ok=True)
    missing = lab_python(lab, "exercises.py", "31.13")
    assert missing.returncode == 2
    assert missing.stderr.strip() == (
        "exercises.py: error: exercise 31.13 needs ex31_13.py, which this lab folder does not have"
    )
    unknown = lab_python(lab, "exercises.py", "31.99")
    assert (
        unknown.returncode == 2 and "give one of 31.8, 31.10, 31.11, 31.12, 31.13" in unknown.stderr
    )


def test_hidden_traces_hold_what_their_cases_teach():
    hidden = UNIT09.traces_dir / "hidden"
    traces = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in hidden.glob("*.json")}
    grading = load_grading(UNIT09)
    used = {case.trace for case in grading.cases if case.hidden}
    assert used <= set(traces)
    cancels = {name: sum("cancelMs" in r for r in t["requests"]) for name, t in traces.items()}
    shared = {name: sum("prefix" in r for r in t["requests"]) for name, t in traces.items()}
    assert cancels["cancel-heavy"] >= len(traces["cancel-heavy"]["requests"]) // 2
    assert shared["shared-mix"] >= 30 and shared["shared-evict"] >= 30
    assert cancels["cancel-shared"] >= 10 and shared["cancel-shared"] >= 20
    # each part is graded with cancellations and with shared prefixes somewhere
    for part in ("cancel", "prefix", "admit"):
        names = {c.trace for c in grading.cases if c.part == part and c.hidden}
        assert any(cancels[n] for n in names) and any(shared[n] for n in names), part
