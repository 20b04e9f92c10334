"""One case in one sandboxed child: ``simulate.py`` on a private copy of the lab folder."""

from __future__ import annotations

import secrets
from pathlib import Path

from .launch import launch
from .results import DEFAULT_LIMITS, ChildResult, Limits, Raw, child_result

CASE_TRACE = "case-trace.json"  # the case's trace, in the case folder


def run_simulation(
    lab_dir: Path,
    submission_files: dict[str, bytes],
    trace_path: Path,
    argv: list[str],
    limits: Limits = DEFAULT_LIMITS,
    script: str = "simulate.py",
) -> ChildResult:
    """Run ``simulate.py --trace <trace> <argv> --output <secret>`` on a private lab copy.

    ``script``: another given script of the lab folder, run as ``SCRIPT --input <file> <argv>
    --output <secret>`` (the file is then the script's input, e.g. a reference run).

    Raises ``SandboxError`` only when the sandbox itself cannot run; whatever the submission
    does (crash, loop, exit early, write junk) comes back as a ``ChildResult``.
    """
    name = f"run-{secrets.token_hex(8)}.json"

    def build(case: str, out: str) -> list[str]:
        trace = f"{case}/{CASE_TRACE}"
        flag = "--trace" if script == "simulate.py" else "--input"
        return [script, flag, trace, *argv, "--output", f"{out}/{name}"]

    def collect(out: Path, raw: Raw, isolation: str) -> list[ChildResult]:
        return [child_result(raw, isolation, out / name, limits)]

    extra = {CASE_TRACE: Path(trace_path).read_bytes()}
    return launch(
        lab_dir, submission_files, extra=extra, build=build, collect=collect, limits=limits
    )[0]
