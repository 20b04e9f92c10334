"""Adversarial submissions graded end to end in the sandbox: each earns exactly what an honest
reading of its policy earns (0 for the cheats), grading goes on, and each case's feedback says
what happened in one line.

The expected score comes from the file's ``EARNS:`` line: ``none``, ``all``, a part name, or
``replay`` (a benign policy whose honest score is what the grader gives it when it runs
in-process, without any sandbox in the way).

Every file runs in every isolation mode the host supports, under a memory ceiling
(``ceiling.py``), and no student-facing output (the text report, the JSON report without
--staff, Gradescope's results.json) may name a hidden case, carry a hidden trace's name (the
files print ``LEAK:<trace name>`` wherever they can) or show how long a hidden case took.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import pytest
from ceiling import under_ceiling
from conftest import ADVERSARIAL
from labtools import READABLE_REPO

from grader import sandbox
from grader.cases import load_grading
from grader.diagnosis.rejections import TEXTS as REJECTION_TEXTS
from grader.grading.grade import Status, grade_submission
from grader.grading.inprocess import run_in_process
from grader.grading.submission import Submission
from grader.sandbox import Limits
from grader.units import REPO_ROOT

LIMITS = Limits(wall_s=10, submission_s=60, cpu_s=0.3, memory_mb=256, processes=32)
# The memory bomb must meet the memory limit, not its CPU share, on a busy machine too.
LIMITS_FOR = {
    "memory_bomb": Limits(wall_s=10, submission_s=60, cpu_s=3, memory_mb=256, processes=32),
    # Without bubblewrap the allocations hit the host's file system: kernel time, CPU share.
    "fill_disk": Limits(wall_s=10, submission_s=60, cpu_s=3, memory_mb=256, processes=32),
}
WORST_CASE_S = 45  # no adversarial submission may hold the grader longer (2 cores, busy)
PEAK_MB = 1024  # nor make the grading process's resident memory grow by more (tests/ceiling.py)
FILES = sorted(ADVERSARIAL.glob("*.py"))
# What each file's cases must report (first feedback line), beyond the score.
EXPECT_STATUS = {
    "infinite_loop": {Status.TIMEOUT},
    "memory_bomb": {Status.CRASH},
    "exit_early": {Status.CRASH},
    "os_exit_in_policy": {Status.CRASH},
    "forged_run": {Status.INVALID_SCHEDULE},
    "invalid_batches": {Status.CRASH},
    "read_secrets": {Status.CRASH, Status.TIMEOUT},  # walking a host may outlast its share
    "import_solutions": {Status.CRASH},
    "patch_engine": {Status.INVALID_SCHEDULE, Status.INCONSISTENT_STATS},
    "patch_clock": {Status.INVALID_SCHEDULE, Status.INCONSISTENT_STATS},
    "patch_metrics": {Status.INCONSISTENT_STATS, Status.INVALID_SCHEDULE},
    "huge_numbers": {Status.INVALID_SCHEDULE},
    "padded_run_file": {Status.INVALID_SCHEDULE},
    "plant_golden": {Status.CRASH, Status.TIMEOUT},  # the walk may outlast its CPU share
    "loop_in_fcfs": {Status.TIMEOUT},
    "empty_policies": {Status.NOT_IMPLEMENTED},
    "quadratic_replay": {Status.INVALID_SCHEDULE},
}
FEEDBACK_WORDS = {
    "infinite_loop": "limit",
    "memory_bomb": "memory limit",
    "exit_early": "without writing its run file",
    "os_exit_in_policy": "without writing its run file",
    "import_solutions": "exception was raised",
    "padded_run_file": "run file rejected",
    "empty_policies": "policies.py defines no function",
    "quadratic_replay": "declares more work than its trace allows",
}
# Visible cases show the traceback below the first line (hidden ones never do).
DETAIL_WORDS = {
    "read_secrets": "RuntimeError: no solution found",
    "import_solutions": "ImportError: could not import the reference solution",
}


# Attacks that hunt the host for a course copy: in rlimits+uid their verdict depends on what
# else the host holds; the guarantee for the grader's own copy is tested on any host by these.
HOST_DEPENDENT = {
    "import_solutions": "test_a_submission_told_the_graders_paths_gets_nothing",
    "read_secrets": "test_sandbox.py::"
    "test_a_child_told_where_the_hidden_material_lies_reads_none_of_it",
}


def earns(path) -> str:
    match = re.search(r"^EARNS: (\S+)$", path.read_text(), re.MULTILINE)
    assert match, f"{path.name} has no EARNS: line"
    return match.group(1)


def test_the_suite_is_big_enough():
    assert len(FILES) >= 12


@pytest.fixture(scope="module")
def grading(unit):
    return load_grading(unit)


def replay_runner(lab_dir, files, trace_path, argv, limits=None):
    """``run_in_process`` with ``sys.argv`` set as the runner sets it (some files read it)."""
    saved = sys.argv
    sys.argv = ["simulate.py", "--trace", str(trace_path), *argv]
    try:
        return run_in_process(lab_dir, files, trace_path, argv, limits)
    finally:
        sys.argv = saved


replay_runner.in_process = True


def expected_score(unit, grading, path) -> float:
    tag = earns(path)
    if tag == "none":
        return 0.0
    if tag == "all":
        return sum(c.points for c in grading.cases)
    if tag == "replay":
        files = {"policies.py": path.read_bytes()}
        return grade_submission(unit, Submission(files), runner=replay_runner).score
    return sum(c.points for c in grading.cases if c.part == tag)


def student_views(report) -> str:
    """Everything a student can be shown of a report, as one text."""
    views = [report.text(), json.dumps(report.to_json()), json.dumps(report.to_gradescope())]
    return "\n".join(views)


def assert_no_leak(unit, grading, report) -> None:
    shown = student_views(report)
    hidden_ids = [c.id for c in grading.cases if c.visibility.value == "hidden"]
    assert not [i for i in hidden_ids if i in shown]
    hidden_names = [p.stem for p in (unit.traces_dir / "hidden").glob("*.json")]
    assert not [n for n in hidden_names if f"LEAK:{n}" in shown]
    assert "staffDetail" not in shown
    # no time that hidden cases took (issue 20): per hidden case, nor the submission's total
    student = report.to_json()
    assert "seconds" not in student and "execution_time" not in report.to_gradescope()
    assert not [c for c in student["cases"] if c["visibility"] == "hidden" and "seconds" in c]


def stray_copies(unit, attack: str) -> list[Path]:
    """Course copies outside this grader's root, readable by anyone, where ``attack`` looks:
    ``import_solutions`` one level below ``/tmp``, ``/home``, ...; ``read_secrets`` the whole
    file system. ``rlimits+uid`` protects the grader's own hidden material only; another
    world-readable clone on the host is out of its reach (docs/sandbox.md), so those files'
    verdicts in that mode depend on the host."""
    wanted = (f"solutions/{unit.id}/policies.py", "grader/reference.py")
    if attack == "read_secrets":
        tops = [t for t, _, files in _walk_reachable("/") if "policies.py" in files]
        found = [Path(t, "policies.py") for t in tops if t.endswith(f"/solutions/{unit.id}")]
    else:
        found = []
        for top in ("/", "/opt", "/srv", "/home", "/root", "/tmp"):
            try:
                names = os.listdir(top)
            except OSError:
                continue
            found += [Path(top, name, rel) for name in names for rel in wanted]
    found = [p for p in found if p.is_file() and _readable_by_others(p)]
    return [p for p in found if REPO_ROOT not in p.parents]


def _walk_reachable(root: str):
    """``os.walk`` as ``read_secrets`` walks (no /proc, /sys, /dev, /usr), entering only the
    folders other users can enter, and none that holds packages or history. A stack, not
    ``os.walk``'s recursion: a folder nested a thousand deep anywhere on the host (a hostile
    submission under test leaves such trees) must not stop the walk."""
    skip = (".git", ".venv", "node_modules", "site-packages", "__pycache__")
    stack = [root]
    while stack:
        top = stack.pop()
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        dirs, files = [], []
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            (dirs if is_dir else files).append(entry.name)
        if top == "/":
            dirs = [d for d in dirs if d not in ("proc", "sys", "dev", "usr")]
        dirs = [d for d in dirs if d not in skip and _enterable(os.path.join(top, d))]
        yield top, dirs, files
        stack.extend(os.path.join(top, d) for d in reversed(dirs))


def _enterable(path: str) -> bool:
    try:
        return bool(os.stat(path).st_mode & stat.S_IXOTH)
    except OSError:
        return False


def _readable_by_others(path: Path) -> bool:
    if not path.stat().st_mode & stat.S_IROTH:
        return False
    return all(p.stat().st_mode & stat.S_IXOTH for p in path.parents)


# fill_disk writes and frees hundreds of MiB per case on the host's disk (rlimits mode): its time
# bound is a claim about the grader, not about a disk shared with a parallel test pass.
DISK_HEAVY = pytest.mark.serial(reason="fill_disk's time bound needs the disk to itself")
PARAMS = [pytest.param(p, marks=DISK_HEAVY if p.stem == "fill_disk" else ()) for p in FILES]


@pytest.mark.parametrize("path", PARAMS, ids=[p.stem for p in FILES])
def test_adversarial_submission(unit, grading, path, mode):
    if (
        mode == "rlimits"
        and path.stem in HOST_DEPENDENT
        and (stray := stray_copies(unit, path.stem))
    ):
        pytest.skip(
            f"verdict depends on this host: a world-readable course copy outside the grader's "
            f"root ({stray[0]}) is in reach of rlimits+uid (docs/sandbox.md); the grader's own "
            f"copy is tested on any host by {HOST_DEPENDENT[path.stem]}"
        )
    files = {"policies.py": path.read_bytes()}
    limits = LIMITS_FOR.get(path.stem, LIMITS)

    def grade():
        started = time.monotonic()
        return grade_submission(unit, Submission(files), limits=limits), time.monotonic() - started

    (report, took), peak_mb = under_ceiling(grade, timeout_s=WORST_CASE_S + 60)
    assert took < WORST_CASE_S, f"{path.stem} held the grader {took:.1f} s"
    assert peak_mb < PEAK_MB, f"{path.stem}: the grading process grew by {peak_mb:.0f} MB"
    assert report.score == pytest.approx(expected_score(unit, grading, path)), report.text()
    assert len(report.cases) == len(grading.cases)  # grading went on through every case
    assert report.isolation.startswith(mode)
    assert_no_leak(unit, grading, report)
    for case in report.cases:
        first = case.feedback.splitlines()[0] if case.feedback else ""
        if case.status is Status.PASSED:
            continue
        assert first
        if path.stem in EXPECT_STATUS:
            assert case.status in EXPECT_STATUS[path.stem], (case.id, case.feedback)
        if path.stem in FEEDBACK_WORDS:
            assert FEEDBACK_WORDS[path.stem] in first, (case.id, first)
        if path.stem == "invalid_batches":  # names the engine rule the batch broke
            assert any(text in first for text in REJECTION_TEXTS.values()), (case.id, first)
        if path.stem in DETAIL_WORDS and case.status is Status.CRASH:
            shown = DETAIL_WORDS[path.stem] in case.feedback
            assert shown != case.hidden, (case.id, case.feedback)


def test_a_submission_told_the_graders_paths_gets_nothing(unit, grading, mode, monkeypatch):
    """``import_solutions`` as an attacker who knows where the grader's checkout lies and its
    whole import path (the editable install names it): it reaches neither the reference
    solution nor the grader's own copy of it, in every mode, wherever the checkout lies. The
    same source run without a sandbox takes full marks, so the 0 is the sandbox's doing."""
    known = [str(REPO_ROOT), *(p for p in sys.path if p and os.path.isdir(p))]
    files = {"policies.py": told_the_paths(known)}
    monkeypatch.setattr(sys, "path", list(sys.path))  # the attack extends it in-process
    unguarded = grade_submission(unit, Submission(files), runner=replay_runner)
    assert unguarded.score == sum(c.points for c in grading.cases), unguarded.text()

    report = grade_submission(unit, Submission(files), limits=LIMITS)
    assert report.score == 0, report.text()
    assert report.isolation.startswith(mode)
    shown = [c for c in report.cases if c.status is Status.CRASH and not c.hidden]
    assert shown and all(DETAIL_WORDS["import_solutions"] in c.feedback for c in shown)
    assert_no_leak(unit, grading, report)


def told_the_paths(paths: list[str]) -> bytes:
    """``import_solutions.py`` with ``KNOWN_PATHS`` set to ``paths``."""
    source = (ADVERSARIAL / "import_solutions.py").read_text()
    blank = "KNOWN_PATHS: list[str] = []\n"
    assert source.count(blank) == 1
    return source.replace(blank, f"KNOWN_PATHS = {paths!r}\n").encode()


def test_correct_submission_full_marks_as_root(unit, grading, solution, mode):
    report = grade_submission(unit, Submission({"policies.py": solution}), limits=LIMITS)
    assert report.score == sum(c.points for c in grading.cases)
    assert report.isolation == mode + ("+uid" if os.geteuid() == 0 else "")


@READABLE_REPO
def test_correct_submission_full_marks_with_an_unprivileged_grader(unit, grading, solution):
    """The whole grader (CLI) runs as uid 65534: no uid switch, bubblewrap or plain rlimits."""
    if os.geteuid() != 0:
        pytest.skip("needs root to start the grader as an unprivileged user")
    python = "/usr/bin/python3"
    site = sysconfig.get_paths()["purelib"]
    elsewhere = "the sandbox under an unprivileged grader is tested on any host by "
    elsewhere += "test_sandbox.py::test_sandbox_runs_for_an_unprivileged_grader"
    if not (sandbox._world_usable(python) and _world_readable_dir(site)):
        pytest.skip(
            f"verdict depends on where the checkout lies: {python} or {site} is not usable by "
            f"an unprivileged user here; {elsewhere}"
        )
    if not all(_world_readable_dir(str(p)) for p in (REPO_ROOT, unit.traces_dir)):
        pytest.skip(
            "verdict depends on where the checkout lies: it or its traces are not readable by "
            f"an unprivileged user here; {elsewhere}"
        )
    work = Path(tempfile.mkdtemp(prefix="infralab-nobody-"))
    try:
        (work / "sub").mkdir()
        (work / "sub" / "policies.py").write_bytes(solution)
        for path in (work, work / "sub", work / "sub" / "policies.py"):
            os.chown(path, 65534, 65534)
        done = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                python,
                "-m",
                "grader.cli",
                "grade",
                "--unit",
                unit.id,
                str(work / "sub"),
                "--json",
                str(work / "report.json"),
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
            cwd=REPO_ROOT,
            env={"PATH": "/usr/bin:/bin", "HOME": str(work), "PYTHONPATH": f"{REPO_ROOT}:{site}"},
        )
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads((work / "report.json").read_text())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert report["score"] == report["maxScore"] == sum(c.points for c in grading.cases)
    assert report["isolation"] in ("bwrap", "rlimits")


def _world_readable_dir(path: str) -> bool:
    parts = [Path(path), *Path(path).parents]
    return all(os.stat(p).st_mode & stat.S_IXOTH for p in parts) and bool(
        os.stat(path).st_mode & stat.S_IROTH
    )
