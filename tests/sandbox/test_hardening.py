"""The sandbox against the attacks of issue 10, one test per guarantee in docs/sandbox.md:
case isolation, the runner's pipes, hard time and disk limits, weak modes refused, uids
reserved across grader processes, odd zips."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest
from conftest import ADVERSARIAL, as_root, private_material
from labtools import READABLE_REPO, WALL_CLOCK

from grader import sandbox
from grader.grading.grade import EnvironmentFailure, GradingError, grade_submission
from grader.grading.submission import Submission, SubmissionError, load_submission
from grader.labfolder import built
from grader.sandbox import Limits, host, run_cases, run_simulation, template, uids
from grader.units import REPO_ROOT

FAST = Limits(wall_s=10, submission_s=60, cpu_s=2, memory_mb=512)


def run(unit, name: str, limits: Limits = FAST, trace: str = "mixed"):
    source = (ADVERSARIAL / f"{name}.py").read_bytes()
    path = unit.lab_dir / "traces" / f"{trace}.json"
    return run_simulation(built(unit), {"policies.py": source}, path, ["--policy", "fcfs"], limits)


def test_a_case_cannot_rewrite_other_cases(unit, mode):
    trace = unit.lab_dir / "traces" / "mixed.json"
    source = (ADVERSARIAL / "tamper_other_cases.py").read_bytes()
    runs = [sandbox.CaseRun(trace, ["--policy", p]) for p in ("fcfs", "chunked", "fcfs")]
    results = run_cases(built(unit), {"policies.py": source}, runs, FAST)
    for result in results:
        assert result.returncode == 0, result.stderr
        assert "rewrote" not in result.stdout
        assert result.stdout.count("LEAK:") == 1  # its own line only, nothing from another case


def test_a_case_cannot_alter_the_lab_of_later_submissions(unit, mode, solution):
    """Case folders of one grader process share the lab's files (hard links to one template):
    a case that appends to, truncates, chmods, renames or replaces the engine and its bytecode
    changes nothing, and the next submission runs on the pristine lab."""
    template.forget()
    template.warm(built(unit))
    try:
        root = Path(template._templates.get(str(built(unit))).root)
        before = _snapshot(root)
        trace = unit.lab_dir / "traces" / "mixed.json"
        runs = [sandbox.CaseRun(trace, ["--policy", "fcfs"])]
        honest = run_cases(built(unit), {"policies.py": solution}, runs, FAST)[0]
        attack = (ADVERSARIAL / "alter_lab.py").read_bytes()
        attacked = run_cases(built(unit), {"policies.py": attack}, runs, FAST)[0]
        assert attacked.returncode == 0, attacked.stderr
        assert "altered: nothing" in attacked.stdout, attacked.stdout
        assert _snapshot(root) == before
        after = run_cases(built(unit), {"policies.py": solution}, runs, FAST)[0]
        assert after.returncode == 0 and after.output == honest.output, after.stderr
    finally:
        template.forget()


def _snapshot(root: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file below ``root``: its bytes, mode and modification time."""
    shot = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            info = path.stat()
            shot[str(path.relative_to(root))] = (path.read_bytes(), info.st_mode, info.st_mtime_ns)
    return shot


def test_the_runners_pipes_cannot_be_taken(unit, mode):
    result = run(unit, "hijack_runner_pipes")
    assert result.returncode == 0, result.stderr
    assert "took 0 runner pipes" in result.stdout
    assert json.loads(result.output)["runs"]


def test_a_child_cannot_signal_other_users(unit, mode):
    result = run(unit, "signal_others")
    assert "killed 0 processes of other users" in result.stdout


def test_disk_quota_caps_a_submission(unit):
    """Under bubblewrap a child writes only to its size-capped tmpfs (/tmp and /out)."""
    if "bwrap" not in sandbox.isolation_mode():
        pytest.skip("the disk quota needs bubblewrap (other modes refuse batches)")
    result = run(unit, "fill_disk")
    written = int(re.search(r"wrote (\d+) MiB", result.stdout).group(1))
    assert written <= FAST.disk_mb < 300
    assert result.returncode == 0 and result.output


@WALL_CLOCK
def test_deadlines_cannot_be_extended(unit, mode):
    """A case that ignores its CPU timer and the soft CPU limit is stopped by the wall
    deadline of its own case; the submission deadline bounds the reruns after it."""
    stubborn = (
        "import signal\nsignal.signal(signal.SIGPROF, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGXCPU, signal.SIG_IGN)\nimport time\ntime.sleep(60)\n"
    )
    trace = unit.lab_dir / "traces" / "prefill-only.json"
    runs = [sandbox.CaseRun(trace, ["--policy", "fcfs"]) for _ in range(6)]
    limits = Limits(wall_s=1, submission_s=2.5, cpu_s=0.3)
    started = time.monotonic()
    results = run_cases(built(unit), {"policies.py": stubborn.encode()}, runs, limits)
    took = time.monotonic() - started
    assert took < 6, took
    assert all(r.out_of_time for r in results)
    assert any(r.skipped == "the submission's time limit was used up" for r in results)


def test_a_policy_that_times_out_is_not_run_again(unit, mode):
    source = (ADVERSARIAL / "loop_in_fcfs.py").read_bytes()
    limits = Limits(wall_s=10, submission_s=60, cpu_s=0.3)
    report = grade_submission(unit, Submission({"policies.py": source}), limits=limits)
    fcfs = [c for c in report.cases if c.part == "fcfs"]
    ran = [c for c in fcfs if "not run" not in c.feedback]
    assert len(ran) == 1 and ran[0].seconds >= 0.3  # its real time, not 0.0
    assert all(c.seconds < 0.2 for c in fcfs if c not in ran)
    skipped = "timeout: fcfs() in policies.py: not run: this policy ran out of time"
    assert all(c.feedback.startswith(skipped) for c in fcfs if c not in ran)
    every = grade_submission(
        unit,
        Submission({"policies.py": source}),
        cases=["fcfs-mixed", "fcfs-unseen"],
        limits=Limits(wall_s=10, submission_s=60, cpu_s=0.3, all_cases=True),
    )
    assert all(c.seconds >= 0.3 for c in every.cases)


def test_empty_policies_is_one_clear_line(unit, mode):
    report = grade_submission(unit, Submission({"policies.py": b""}), cases=["fcfs-mixed"])
    assert report.cases[0].feedback == (
        "not implemented: policies.py defines no function fcfs() (is the file empty or incomplete?)"
    )


def _zip_with(flag: int | None = None, method: int | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("policies.py", "def fcfs(view):\n    pass\n")
    data = bytearray(buffer.getvalue())
    local, central = data.find(b"PK\x03\x04"), data.find(b"PK\x01\x02")
    if flag is not None:
        struct.pack_into("<H", data, local + 6, flag)
        struct.pack_into("<H", data, central + 8, flag)
    if method is not None:
        struct.pack_into("<H", data, local + 8, method)
        struct.pack_into("<H", data, central + 10, method)
    return bytes(data)


@pytest.mark.parametrize(
    ("kind", "needle"),
    [
        ({"flag": 1}, "is encrypted"),
        ({"method": 99}, "unsupported compression method"),
        ({"method": 12}, "unsupported compression method"),  # bzip2: not for submissions
    ],
)
def test_odd_zip_entries_are_one_line(tmp_path, unit, kind, needle):
    path = tmp_path / "sub.zip"
    path.write_bytes(_zip_with(**kind))
    with pytest.raises(SubmissionError, match=needle):
        load_submission(path, unit.editable)
    with pytest.raises(GradingError, match=needle):
        grade_submission(unit, path)


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


REDRAW = "\x1b[2J\x1b[H\x1b[32mTOTAL 100/100\x1b[0m\r\x07\u202e"


def test_nothing_a_submission_writes_or_names_redraws_the_graders_report(unit, solution, tmp_path):
    """A policy that raises with escape sequences, a carriage return, a bell and a
    bidirectional override in its message, in a submission holding a file named with them:
    the report a TA reads in a terminal shows them as escapes; what the grader prints itself
    keeps its newlines."""
    folder = tmp_path / "submission"
    folder.mkdir()
    raising = f"\n\ndef fcfs(view):\n    raise RuntimeError({REDRAW!r})\n"
    (folder / "policies.py").write_text(solution.decode() + raising)
    (folder / f"notes{REDRAW.replace('/', '-')}.txt").write_text("x")
    report = grade_submission(unit, load_submission(folder, unit.editable), cases=["fcfs-mixed"])
    text = report.text(staff=True)
    assert "RuntimeError: \\x1b[2J" in text and "\\u202e" in text, text
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", text), text
    assert text.count("\n") >= 4
    shown = "\n".join(t["output"] for t in report.to_gradescope()["tests"])  # a page shows these
    assert "RuntimeError: \\x1b[2J" in shown, shown
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", shown), shown


def test_no_zip_entry_name_redraws_what_the_grader_prints(tmp_path, solution):
    """A zip whose entry names hold escape sequences, carriage returns and a newline (two
    ``policies.py`` at one depth, so the refusal quotes them): ``infralab grade`` (one
    submission and a batch's ``scores.csv``) and ``infralab similarity`` print them as escapes,
    in one line. Before, the raw bytes reached the TA's terminal and the CSV cell."""
    zipped = tmp_path / "student.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("a/policies.py", solution)
        archive.writestr(f"{REDRAW.replace('/', '-')}\nTOTAL 59 - 59/policies.py", solution)
    cli = [sys.executable, "-m", "grader.cli"]
    one = subprocess.run([*cli, "grade", "--unit", "unit07", str(zipped)], **_TEXT)
    reference = str(REPO_ROOT / "solutions" / "unit07")
    batch = [*cli, "grade", "--unit", "unit07", "--out", str(tmp_path / "out")]
    many = subprocess.run([*batch, str(zipped), reference], **_TEXT)
    alike = [*cli, "similarity", "--unit", "unit07", "--out", str(tmp_path / "similar")]
    similar = subprocess.run([*alike, str(zipped), reference], **_TEXT)
    assert many.returncode == 0, many.stderr
    csv_text = (tmp_path / "out" / "scores.csv").read_text()
    for shown in (one.stderr, similar.stderr, csv_text):
        assert "\\x1b[2J" in shown and "\\nTOTAL" in shown, shown
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", shown), shown
    assert (one.returncode, similar.returncode, many.returncode) == (2, 2, 0)
    assert one.stderr.count("\n") == similar.stderr.count("\n") == 1
    assert csv_text.count("\n") == 3, csv_text  # the header and two rows


_TEXT = {"capture_output": True, "text": True, "timeout": 300}


def test_a_refusal_quotes_a_bounded_part_of_the_names(tmp_path):
    """A zip of 2,000 ``policies.py`` at one depth, each below a folder with a 1,000-character
    name: the refusal in a batch's ``scores.csv`` (a cell a spreadsheet must hold) and in the
    student's report lists three names and how many more, in at most 1,000 characters. Before,
    it listed every name: a 2 MB cell, rewritten with the CSV after every submission."""
    zipped = tmp_path / "student.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        for number in range(2000):
            archive.writestr(f"{number:04d}{'x' * 996}/policies.py", b"")
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "grader.cli", "grade", "--unit", "unit07", "--case"]
    argv += ["fcfs-mixed", str(zipped), str(REPO_ROOT / "solutions" / "unit07"), "--out", str(out)]
    done = subprocess.run(argv, **_TEXT)
    assert done.returncode == 0, done.stderr
    error = next(csv.DictReader((out / "scores.csv").open()))["error"]
    assert error.startswith(f"submission {zipped}: more than one policies.py (0000x"), error
    assert error.endswith("/policies.py and 1997 more)") and len(error) <= 1000, len(error)
    assert json.loads((out / "reports" / "student.json").read_text())["error"] == error


def test_a_deep_submission_folder_is_one_line_and_never_stops_a_batch(tmp_path, solution):
    """A submission folder 1,200 folders deep (the reference's ``policies.py`` on top, as an
    unpacked zip would hand it to the grader): ``infralab grade`` and ``infralab similarity``
    refuse it in one line, and a batch gives it a row of its own and grades the others. Before,
    the standard library's recursive walk raised ``RecursionError``: a traceback, and a batch
    stopped before grading anyone."""
    deep = tmp_path / "deep"
    deep.mkdir()
    (deep / "policies.py").write_bytes(solution)
    folders = [deep]
    for _ in range(1200):
        folders.append(folders[-1] / "a")
        folders[-1].mkdir()
    try:
        cli = [sys.executable, "-m", "grader.cli"]
        reference = str(REPO_ROOT / "solutions" / "unit07")
        grade = [*cli, "grade", "--unit", "unit07", "--case", "fcfs-mixed", str(deep)]
        one, batch = grade, [*grade, reference, "--out", str(tmp_path / "out")]
        alike = [*cli, "similarity", "--unit", "unit07", str(deep), reference]
        alike += ["--out", str(tmp_path / "similar")]
        runs = [subprocess.run(argv, **_TEXT) for argv in (one, batch, alike)]
    finally:  # the standard library's rmtree recurses too
        for folder in reversed(folders[1:]):
            folder.rmdir()
    refusal = f"infralab: error: submission {deep}: folders nested more than 32 deep\n"
    assert (runs[0].returncode, runs[0].stderr) == (2, refusal)
    assert (runs[2].returncode, runs[2].stderr) == (2, refusal)
    assert runs[1].returncode == 0, runs[1].stderr
    rows = (tmp_path / "out" / "scores.csv").read_text().splitlines()
    assert rows[1] == f"deep,0,,0,0,submission {deep}: folders nested more than 32 deep"
    assert rows[2].startswith("unit07,2,2,2,"), rows


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


def test_reserved_uids_are_exclusive(monkeypatch):
    if not as_root():
        pytest.skip("dedicated uids are only used by a root grader")
    picks = iter([250_001, 250_001, 250_002])
    monkeypatch.setattr(uids, "fresh_uid", lambda: next(picks))
    with uids.reserved_uid() as first, uids.reserved_uid() as second:
        assert (first, second) == (250_001, 250_002)
    assert oct(uids.lock_dir().stat().st_mode & 0o777) == "0o700"


def test_uid_locks_hold_across_processes():
    """A uid reserved by one grader process is skipped by another."""
    if not as_root():
        pytest.skip("dedicated uids are only used by a root grader")
    code = (
        "import sys, time\nfrom grader.sandbox import uids\nuids.fresh_uid = lambda: 250_003\n"
        "with uids.reserved_uid():\n    print('held', flush=True)\n    time.sleep(30)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        picks = iter([250_003, 250_004])
        saved = uids.fresh_uid
        uids.fresh_uid = lambda: next(picks)
        try:
            with uids.reserved_uid() as uid:
                assert uid == 250_004
        finally:
            uids.fresh_uid = saved
    finally:
        holder.kill()
        holder.wait()


ESCAPER = """
import os, sys, time
middle = os.fork()
if middle == 0:  # a daemon: its own session, its parent gone
    os.setsid()
    if os.fork():
        os._exit(0)
    time.sleep(60)
    os._exit(0)
os.waitpid(middle, 0)
print("ready", flush=True)
time.sleep(60)
"""


def test_every_process_of_a_child_uid_is_killed_and_no_other():
    if not as_root():
        pytest.skip("a dedicated uid needs root")
    python = host.current_plan().python.path  # one that any uid may run
    uids.become_subreaper()
    with uids.reserved_uid() as uid, uids.reserved_uid() as bystander_uid:
        spawn = {"user": uid, "group": uid, "extra_groups": [], "cwd": "/", "env": {}}
        child = subprocess.Popen([python, "-c", ESCAPER], stdout=subprocess.PIPE, **spawn)
        spawn |= {"user": bystander_uid, "group": bystander_uid}
        bystander = subprocess.Popen([python, "-c", "import time; time.sleep(60)"], **spawn)
        try:
            assert child.stdout.readline() == b"ready\n"
            deadline = time.monotonic() + 10
            while len(_running_as(uid)) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(_running_as(uid)) == 2  # the child and its daemon
            uids.kill_uid(uid)
            child.wait(timeout=10)
            assert _running_as(uid) == []
            assert bystander.poll() is None  # another uid's process lives on
        finally:
            bystander.kill()
            bystander.wait()
            uids.kill_uid(uid)
    with pytest.raises(ValueError, match="dedicated"):
        uids.kill_uid(os.getuid())


def _running_as(uid: int) -> list[str]:
    """PIDs of live (not zombie) processes of ``uid``."""
    found = []
    for entry in os.scandir("/proc"):
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                with open(f"/proc/{entry.name}/stat") as handle:
                    if handle.read().rsplit(")", 1)[1].split()[0] != "Z":
                        found.append(entry.name)
        except OSError:
            continue
    return found


def test_two_graders_side_by_side(unit, solution, tmp_path):
    """Two grader processes at once, each with a fork bomb and a submission that signals
    everything it sees: neither disturbs the other, both give the same scores."""
    subs = tmp_path / "subs"
    for name in ("fork_bomb", "signal_others"):
        (subs / name).mkdir(parents=True)
        (subs / name / "policies.py").write_bytes((ADVERSARIAL / f"{name}.py").read_bytes())
    (subs / "correct").mkdir()
    (subs / "correct" / "policies.py").write_bytes(solution)
    cases = ["--case", "fcfs-mixed", "--case", "chunked-ties-chunk2"]
    argv = [sys.executable, "-m", "grader.cli", "grade", "--unit", unit.id, "--jobs", "2"]
    outputs = [tmp_path / "out-a", tmp_path / "out-b"]
    done: list = [None, None]

    def grade(n: int) -> None:
        done[n] = subprocess.run(
            [*argv, *map(str, sorted(subs.iterdir())), "--out", str(outputs[n]), *cases],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    threads = [threading.Thread(target=grade, args=(n,)) for n in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for result in done:
        assert result.returncode == 0, result.stderr
    csvs = [(out / "scores.csv").read_text() for out in outputs]
    assert csvs[0] == csvs[1]
    rows = {line.split(",")[0]: line.split(",") for line in csvs[0].splitlines()[1:]}
    assert rows["correct"][1] == rows["correct"][2] == rows["fork_bomb"][1] == "5"
    assert rows["signal_others"][1] == "5"


def test_run_file_cap_follows_the_trace(unit):
    from grader.grading.limits import run_file_cap

    small = json.loads((unit.lab_dir / "traces" / "prefill-only.json").read_text())
    big = json.loads((unit.traces_dir / "hidden" / "azure-conv.json").read_text())
    assert run_file_cap(small) < 128 << 10 < run_file_cap(big) < 1 << 20


def test_untrusted_numbers_are_bounded():
    from grader.grading.judge import bounded_json

    assert bounded_json(b'{"a": 12.5, "b": [1, 2]}') == {"a": 12.5, "b": [1, 2]}
    for bad in (b'{"a": 1' + b"0" * 400 + b"}", b'{"a": 1e300}', b'{"a": NaN}'):
        with pytest.raises(ValueError):
            bounded_json(bad)


def test_report_of_a_submission_is_private(unit, solution, tmp_path):
    from grader.cli import main

    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "policies.py").write_bytes(solution)
    out = tmp_path / "report.json"
    assert (
        main(["grade", "--unit", unit.id, str(sub), "--case", "fcfs-mixed", "--json", str(out)])
        == 0
    )
    assert out.stat().st_mode & 0o777 == 0o600


def test_the_runner_works_without_pidfd(monkeypatch, unit, solution):
    """Kernels without pidfd_open: the parent polls for the child's exit instead."""

    def missing(pid):
        raise OSError("pidfd_open is not supported")

    monkeypatch.setattr("grader.sandbox.session.os.pidfd_open", missing)
    path = unit.lab_dir / "traces" / "mixed.json"
    result = run_simulation(built(unit), {"policies.py": solution}, path, ["--policy", "both"])
    assert result.returncode == 0, result.stderr
    assert [r["policy"] for r in json.loads(result.output)["runs"]] == ["fcfs", "chunked"]
