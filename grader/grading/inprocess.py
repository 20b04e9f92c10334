"""Run trusted staff code (the mutant corpus) in this process instead of a sandboxed child.

Same signature and result as ``sandbox.run_simulation`` so ``grade_submission`` can use it as
its runner; about fifty times faster because no interpreter starts. Never use it for student
code: there is no isolation and no timeout here.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import traceback
import types
from pathlib import Path

from ..sandbox import ChildResult, Limits

ISOLATION = "in-process (trusted staff code, no isolation)"


def run_in_process(
    lab_dir: Path,
    submission_files: dict[str, bytes],
    trace_path: Path,
    argv: list[str],
    limits: Limits | None = None,
) -> ChildResult:
    """Run the lab's CLI on ``submission_files['policies.py']`` loaded as a fresh module."""
    from servesim.cli import main as simulate_main

    module = types.ModuleType("_infralab_inprocess_policies")
    module.__file__ = "policies.py"
    out, err = io.StringIO(), io.StringIO()
    with tempfile.TemporaryDirectory(prefix="infralab-inproc-") as tmp:
        output = Path(tmp) / "run.json"
        argv = ["--trace", str(trace_path), *argv, "--output", str(output)]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                source = submission_files["policies.py"].decode("utf-8")
                exec(compile(source, "policies.py", "exec"), module.__dict__)
                code = simulate_main(argv, policies_module=module, lab_dir=Path(lab_dir))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                traceback.print_exc()
                code = 1
        data = output.read_bytes() if output.is_file() else None
    return ChildResult(code, out.getvalue(), err.getvalue(), False, data, ISOLATION)


run_in_process.in_process = True
