"""scripts/setup.sh says what it is doing: every slow command follows a one-line step notice."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from grader.units import REPO_ROOT

SLOW = re.compile(r"^\s*(apt-get install|apt-get update|python3 -m venv|pip |npm )")


def test_every_install_step_is_announced():
    lines = (REPO_ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8").splitlines()
    slow = [i for i, line in enumerate(lines) if SLOW.match(line)]
    assert len(slow) >= 6  # apt update/install, npm, venv, torch, the package
    for i in slow:
        before = [line.strip() for line in lines[max(0, i - 2) : i]]
        assert any(b.startswith("step ") for b in before), f"setup.sh line {i + 1} runs silently"


def test_scripts_parse():
    for name in ("setup.sh", "test.sh"):
        result = subprocess.run(["bash", "-n", str(REPO_ROOT / "scripts" / name)])
        assert result.returncode == 0, name


def test_the_whole_run_prints_its_slowest_tests_across_both_passes(tmp_path):
    """test.sh's last lines: the slowest tests of the parallel and the serial pass together."""
    for name, times in (("parallel", [0.5, 3.25]), ("serial", [7.0, 0.25])):
        cases = "".join(
            f'<testcase classname="tests.test_{name}" name="t{n}" time="{t}"/>'
            for n, t in enumerate(times)
        )
        (tmp_path / f"{name}.xml").write_text(
            f"<testsuites><testsuite>{cases}</testsuite></testsuites>"
        )
    script = REPO_ROOT / "scripts" / "slowest_tests.py"
    reports = [str(tmp_path / "parallel.xml"), str(tmp_path / "serial.xml")]
    out = subprocess.run(
        [sys.executable, str(script), "3", *reports], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == "[test] the slowest 3 tests (setup + call + teardown):"
    assert [line.split()[-1] for line in out[1:]] == [
        "tests.test_serial::t0",
        "tests.test_parallel::t1",
        "tests.test_parallel::t0",
    ]
    assert "7.00 s" in out[1]
    text = (REPO_ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    assert "slowest_tests.py 20" in text


def _stub(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def test_the_fast_tier_sets_a_fresh_clone_up_first(tmp_path):
    """``test.sh --fast`` in a clone without .venv runs ``setup.sh --if-needed test`` before
    anything else (here a stand-in that records how it was called and stops the run)."""
    clone = tmp_path / "a clone"
    (clone / "scripts").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "scripts" / "test.sh", clone / "scripts" / "test.sh")
    calls = tmp_path / "calls"
    _stub(clone / "scripts" / "setup.sh", f'echo "$@" >> "{calls}"; exit 3')
    done = subprocess.run(
        ["bash", str(clone / "scripts" / "test.sh"), "--fast"], capture_output=True, text=True
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert calls.read_text() == "--if-needed test\n"


def test_setup_if_needed_skips_only_a_setup_done_here_from_the_same_files(tmp_path):
    """``setup.sh --if-needed`` runs the setup unless this folder's .venv records one for the
    same extras from the same pyproject.toml and package-lock.json; a copied clone (its .venv
    with it) or a changed pyproject.toml sets up again. Stand-ins for python3 and the venv's
    python record every install; no real one is made."""
    clone = tmp_path / "with space" / "infra"
    (clone / "scripts").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "scripts" / "setup.sh", clone / "scripts" / "setup.sh")
    for name in ("pyproject.toml", "package-lock.json"):
        shutil.copy(REPO_ROOT / name, clone / name)
    installs = tmp_path / "installs"
    _stub(clone / ".venv" / "bin" / "python", f'echo "$@" >> "{installs}"')
    stubs = _stub(tmp_path / "bin" / "python3", "exit 0").parent
    env = {**os.environ, "PATH": f"{stubs}:/usr/bin:/bin"}

    def setup(folder: Path, *args: str) -> str:
        done = subprocess.run(
            ["bash", str(folder / "scripts" / "setup.sh"), *args],
            capture_output=True,
            text=True,
            env=env,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def count() -> int:
        return len(installs.read_text().splitlines()) if installs.exists() else 0

    assert "skipping" not in setup(clone, "--if-needed")
    assert count() == 1
    assert "already set up" in setup(clone, "--if-needed")
    assert count() == 1
    assert "already set up" not in setup(clone, "--if-needed", "site")  # other extras
    assert count() == 2
    assert "already set up" in setup(clone, "--if-needed")  # both recorded
    setup(clone)  # without --if-needed: always
    assert count() == 3
    copy = tmp_path / "copy"
    shutil.copytree(clone, copy, symlinks=True)
    assert "already set up" not in setup(copy, "--if-needed")
    with open(clone / "pyproject.toml", "a") as handle:
        handle.write("\n# changed\n")
    assert "already set up" not in setup(clone, "--if-needed")
    assert count() == 5
