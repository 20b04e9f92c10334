"""scripts/setup.sh says what it is doing: every slow command follows a one-line step notice."""

from __future__ import annotations

import re
import subprocess

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
