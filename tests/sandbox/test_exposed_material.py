"""Grading refuses any mode in which a child could read what it must not: the weak modes
always, and in rlimits+uid (no bubblewrap) hidden material other users can reach: hidden traces,
golden files, solutions, the unit folders with their mutants (of every unit of the course) and
every variant secret the grader read (docs/sandbox.md, "What is enforced")."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import as_root, private_material
from labtools import READABLE_REPO

from grader import sandbox
from grader.grading.grade import EnvironmentFailure, grade_submission
from grader.grading.submission import Submission
from grader.sandbox import host
from grader.units import REPO_ROOT

_TEXT = {"capture_output": True, "text": True, "timeout": 300}


def _plan(mode: str, drop_uid: bool) -> host.Plan:
    return host.Plan(mode, drop_uid, host.Interpreter(sys.executable, sys.prefix), None)


def test_weak_modes_are_refused(monkeypatch, open_tmp, unit):
    public = open_tmp / "public"
    public.mkdir()
    public.chmod(0o755)
    private = open_tmp / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setattr(host, "current_plan", lambda: _plan("rlimits", False))
    with pytest.raises(sandbox.SandboxError, match="install bubblewrap"):
        sandbox.require_safe_isolation([private])
    monkeypatch.setattr(host, "current_plan", lambda: _plan("rlimits", True))
    assert sandbox.reachable_by_others(public)
    with pytest.raises(sandbox.SandboxError, match="chmod go-rwx"):
        sandbox.require_safe_isolation([private, public])
    assert sandbox.require_safe_isolation([private]) == "rlimits+uid"
    with pytest.raises(sandbox.SandboxError, match="disk"):
        sandbox.require_safe_isolation([private], batch=True)
    monkeypatch.setattr(host, "current_plan", lambda: _plan("bwrap", False))
    assert sandbox.require_safe_isolation([public], batch=True) == "bwrap"


@READABLE_REPO
def test_grading_refuses_an_exposed_repo_in_the_rlimits_mode(monkeypatch, unit, solution):
    if not as_root():
        pytest.skip("rlimits+uid needs root")
    monkeypatch.setenv(sandbox.MODE_ENV, "rlimits")
    if not sandbox.reachable_by_others(unit.traces_dir):
        pytest.skip(
            "verdict depends on where the checkout lies: its hidden traces are private here "
            "already; the refusal is tested on any host by "
            "test_grading_refuses_exposed_hidden_material_in_the_rlimits_mode"
        )
    with pytest.raises(EnvironmentFailure, match="reachable by other users"):
        grade_submission(unit, Submission({"policies.py": solution}), cases=["fcfs-mixed"])


def test_grading_refuses_exposed_hidden_material_in_the_rlimits_mode(
    monkeypatch, open_tmp, unit, solution
):
    """The same refusal with the hidden material in a folder every user reaches, wherever the
    checkout lies; nothing of the submission runs."""
    if not as_root():
        pytest.skip("rlimits+uid needs root")
    from grader.grading import grade

    exposed = open_tmp / "traces"
    exposed.mkdir(mode=0o755)
    monkeypatch.setenv(sandbox.MODE_ENV, "rlimits")
    monkeypatch.setattr(grade, "hidden_material", lambda unit_: [exposed])
    monkeypatch.setattr(grade, "run_all_cases", _never_called)
    with pytest.raises(EnvironmentFailure, match="reachable by other users"):
        grade_submission(unit, Submission({"policies.py": solution}), cases=["fcfs-mixed"])


def test_a_world_readable_file_is_reachable_by_others(open_tmp):
    """A file counts as reachable when other users may read it (o+r below folders they may
    enter), not when it has an execute bit."""
    shared = open_tmp / "variant.secret"
    shared.write_text("x" * 32)
    shared.chmod(0o644)
    assert sandbox.reachable_by_others(shared)
    shared.chmod(0o600)
    assert not sandbox.reachable_by_others(shared)


def test_grading_refuses_a_variant_secret_other_users_can_read(
    monkeypatch, open_tmp, unit, solution
):
    """A variant secret the grader read (``--secret``, the environment, the course root) is
    hidden material: in rlimits+uid a child could read it and compute every student's variant.
    With the unit's own material private, grading refuses while the secret is world-readable,
    naming it, and goes ahead once it is private."""
    if not as_root():
        pytest.skip("rlimits+uid needs root")
    from grader.grading import grade, limits
    from grader.variants import keys

    private = open_tmp / "hidden"
    private.mkdir(mode=0o700)
    secret = open_tmp / "variant.secret"
    secret.write_text("s" * 64)
    secret.chmod(0o644)
    monkeypatch.setattr(keys, "_READ", {})
    keys.load_secret(secret)
    monkeypatch.setenv(sandbox.MODE_ENV, "rlimits")
    monkeypatch.setattr(limits, "unit_material", lambda unit_: [private])
    monkeypatch.setattr(grade, "run_all_cases", _never_called)
    with pytest.raises(EnvironmentFailure, match=f"{re.escape(str(secret))} is reachable"):
        grade_submission(unit, Submission({"policies.py": solution}), cases=["fcfs-mixed"])
    secret.chmod(0o600)
    with pytest.raises(AssertionError, match="the submission ran"):
        grade_submission(unit, Submission({"policies.py": solution}), cases=["fcfs-mixed"])


# Each function taken from a mutant whose one mistake is in the other function.
FROM_MUTANTS = """
import types


def _take(name, function):
    path = f"MUTANTS/{name}.py"
    module = types.ModuleType(name)
    exec(compile(open(path).read(), path, "exec"), module.__dict__)
    return getattr(module, function)


fcfs = _take("chunk_off_by_one", "fcfs")
chunked = _take("fcfs_interleaves_decode", "chunked")
"""


def test_grading_refuses_a_unit_folder_other_users_can_read(open_tmp, tmp_path, unit):
    """In rlimits+uid with the hidden traces and solutions private, as the refusal asks, a
    child read the unit's mutants (the reference with one mistake each) and took each function
    from a mutant where it is right: full marks on unit 07 through ``infralab grade``. The unit
    folder is hidden material: grading refuses, naming it, and once it is private the same
    submission earns nothing."""
    if not as_root():
        pytest.skip("rlimits+uid needs root")
    with private_material(unit):  # rlimits tests one at a time: a copy is in reach
        course = _course_copy(open_tmp, "unit07")
        for rel in ("traces", "solutions"):
            (course / rel).chmod(0o700)
        unit_dir = course / "labs" / "unit07"
        (tmp_path / "submission").mkdir()
        source = FROM_MUTANTS.replace("MUTANTS", str(unit_dir / "mutants"))
        (tmp_path / "submission" / "policies.py").write_text(source)
        argv = [sys.executable, "-m", "grader.cli", "--root", str(course), "grade", "--unit"]
        argv += ["unit07", str(tmp_path / "submission"), "--case", "fcfs-mixed"]
        argv += ["--case", "chunked-mixed"]
        env = {**os.environ, sandbox.MODE_ENV: "rlimits"}
        refused = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        assert refused.returncode == 3, refused.stdout
        assert f"{unit_dir} is reachable by other users" in refused.stderr
        (course / "labs").chmod(0o700)
        graded = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        assert graded.returncode == 0, graded.stderr
        assert re.search(r"^unit07: 0 / [1-9]", graded.stdout, re.MULTILINE), graded.stdout


def _course_copy(where: Path, *units: str) -> Path:
    """A course root below ``where`` with the material of ``units`` and unit 07's lab folder,
    each copied folder readable by other users (``private_material`` may hold the checkout's
    own private while this copies)."""
    course = where / "course"
    for rel in ["starter/unit07", *(f"{top}/{u}" for u in units for top in COURSE_TOPS)]:
        shutil.copytree(REPO_ROOT / rel, course / rel, symlinks=True)
        (course / rel).chmod(0o755)
    return course


COURSE_TOPS = ("labs", "traces", "solutions")


def test_grading_refuses_another_units_material_other_users_can_read(open_tmp, tmp_path, unit):
    """In rlimits+uid with unit 07's own material private, a unit 07 submission read unit 08's
    reference solution and showed it in a public case's traceback (its student view). Every
    unit of the course is hidden material: grading refuses, naming unit 08's first folder, and
    once unit 08's folders are private too the traceback shows no line of that solution."""
    if not as_root():
        pytest.skip("rlimits+uid needs root")
    with private_material(unit):  # rlimits tests one at a time: a copy is in reach
        course = _course_copy(open_tmp, "unit07", "unit08")
        for top in COURSE_TOPS:
            (course / top / "unit07").chmod(0o700)
        target = course / "solutions" / "unit08" / "policies.py"
        leak = f"def fcfs(view):\n    raise RuntimeError(open({str(target)!r}).read())\n"
        (tmp_path / "submission").mkdir()
        (tmp_path / "submission" / "policies.py").write_text(leak + "chunked = fcfs\n")
        argv = [sys.executable, "-m", "grader.cli", "--root", str(course), "grade", "--unit"]
        argv += ["unit07", "--case", "fcfs-mixed", str(tmp_path / "submission")]
        env = {**os.environ, sandbox.MODE_ENV: "rlimits"}
        refused = subprocess.run(argv, env=env, **_TEXT)
        assert refused.returncode == 3, refused.stdout
        assert f"{course / 'traces' / 'unit08'} is reachable by other users" in refused.stderr
        for top in COURSE_TOPS:
            (course / top / "unit08").chmod(0o700)
        graded = subprocess.run(argv, env=env, **_TEXT)
        assert graded.returncode == 0, graded.stderr
        assert "PermissionError" in graded.stdout, graded.stdout
        assert "Unit 08 scheduling policies" not in graded.stdout
        assert target.read_text().splitlines()[0] not in graded.stdout


def _never_called(*args, **kwargs):
    raise AssertionError("the submission ran although the hidden material was exposed")
