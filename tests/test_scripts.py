"""scripts/setup.sh says what it is doing: every slow command follows a one-line step notice."""

from __future__ import annotations

import re
import subprocess
import sys

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
