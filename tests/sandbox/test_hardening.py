"""The sandbox against the attacks of issue 10, one test per guarantee in docs/sandbox.md:
case isolation, the runner's pipes, hard time and disk limits, weak modes refused, uids
reserved across grader processes, odd zips."""

from __future__ import annotations

import io
import json
import os
import re
import struct
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest
from conftest import ADVERSARIAL, as_root
from labtools import WALL_CLOCK

from grader import sandbox
from grader.grading.grade import GradingError, grade_submission
from grader.grading.submission import Submission, SubmissionError, load_submission
from grader.labfolder import built
from grader.sandbox import Limits, host, run_cases, run_simulation, template, uids

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
