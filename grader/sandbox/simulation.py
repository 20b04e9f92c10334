"""One case in one sandboxed child: ``simulate.py`` in a private case folder of the lab."""

from __future__ import annotations

from pathlib import Path

from .multicase import CaseRun, run_cases
from .results import DEFAULT_LIMITS, ChildResult, Limits


def run_simulation(
    lab_dir: Path,
    submission_files: dict[str, bytes],
    trace_path: Path,
    argv: list[str],
    limits: Limits = DEFAULT_LIMITS,
    script: str = "simulate.py",
) -> ChildResult:
    """Run ``simulate.py --trace <trace> <argv> --output <run file>`` in a private case folder.

    The same runner and checks as ``run_cases``, with one case. Raises ``SandboxError`` only
    when the sandbox itself cannot run; whatever the submission does (crash, loop, exit
    early, write junk) comes back as a ``ChildResult``. ``script``: another given script of
    the lab folder, run as ``SCRIPT --input <file> <argv> --output <file>``.
    """
    run = CaseRun(Path(trace_path), list(argv), script=script)
    return run_cases(lab_dir, submission_files, [run], limits)[0]
