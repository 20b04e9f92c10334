"""``infralab ... | head``: a reader that stops early ends the command quietly (no traceback,
no error line), as a process killed by SIGPIPE would end."""

from __future__ import annotations

import subprocess
import sys

import pytest

from grader.units import CODE_ROOT


@pytest.mark.parametrize(
    "argv",
    [["units"], ["grade", "--unit", "unit07", "solutions/unit07"]],
    ids=["units", "grade"],
)
def test_output_into_a_closed_pipe_ends_quietly(argv):
    child = subprocess.Popen(
        [sys.executable, "-m", "grader.cli", *argv],
        cwd=CODE_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    child.stdout.close()  # the reader is gone before the first line is written
    stderr = child.stderr.read().decode()
    code = child.wait(timeout=300)
    assert "Traceback" not in stderr and "Broken pipe" not in stderr, stderr
    assert "BrokenPipeError" not in stderr and code == 141, (code, stderr)
