"""Run one simulation of a submission in a child process, away from the grader's own files.

Interface used by grading (keep it stable):

    run_simulation(lab_dir, submission_files, trace_path, argv, limits) -> ChildResult

The child gets a fresh temp folder holding a pristine copy of the lab folder, the student's
editable files and the one trace; it writes its run file to a path it is told on the command
line, and the parent reads that file back. This first version only applies a wall timeout;
see the sandbox issue for the hardened version (bubblewrap, rlimits, unprivileged user).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

OUTPUT_LIMIT = 64 * 1024  # characters of stdout/stderr kept for feedback


@dataclass(frozen=True)
class Limits:
    wall_s: float = 20.0
    cpu_s: int = 10
    memory_mb: int = 1024
    file_mb: int = 64
    open_files: int = 64
    processes: int = 64


@dataclass(frozen=True)
class ChildResult:
    returncode: int | None  # None when the child was killed for time
    stdout: str
    stderr: str
    timed_out: bool
    output: bytes | None  # the run file the child wrote, if any
    isolation: str  # which isolation mode ran, for every report


def run_simulation(
    lab_dir: Path,
    submission_files: dict[str, bytes],
    trace_path: Path,
    argv: list[str],
    limits: Limits = Limits(),
) -> ChildResult:
    """Run ``simulate.py --trace <trace> <argv> --output <secret>`` on a private lab copy."""
    with tempfile.TemporaryDirectory(prefix="infralab-case-") as tmp:
        work = Path(tmp) / "lab"
        shutil.copytree(lab_dir, work, ignore=shutil.ignore_patterns("__pycache__", "tests"))
        for name, data in submission_files.items():
            (work / name).write_bytes(data)
        trace = work / "case-trace.json"
        shutil.copyfile(trace_path, trace)
        output = Path(tmp) / "out" / f"run-{secrets.token_hex(8)}.json"
        output.parent.mkdir()
        command = [sys.executable, "-I", "simulate.py", "--trace", str(trace), *argv]
        command += ["--output", str(output)]
        env = {"PATH": os.defpath, "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            done = subprocess.run(
                command,
                cwd=work,
                env=env,
                capture_output=True,
                timeout=limits.wall_s,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            return ChildResult(None, _text(exc.stdout), _text(exc.stderr), True, None, "process")
        data = output.read_bytes() if output.is_file() else None
        return ChildResult(
            done.returncode, _text(done.stdout), _text(done.stderr), False, data, "process"
        )


def _text(data) -> str:
    if not data:
        return ""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return text[:OUTPUT_LIMIT]
