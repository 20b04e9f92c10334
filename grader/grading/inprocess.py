"""Run trusted staff code (the mutant corpus) in this process instead of a sandboxed child.

Same signature and result as ``sandbox.run_simulation`` so ``grade_submission`` can use it as
its runner; about fifty times faster because no interpreter starts. Never use it for student
code: there is no isolation and no timeout here.
"""

from __future__ import annotations

import contextlib
import functools
import io
import sys
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
    script: str = "simulate.py",
) -> ChildResult:
    """Run the lab's CLI on ``submission_files['policies.py']`` loaded as a fresh module.

    ``script``: another given script of the lab folder (``main(argv)``, ``--input``), run with
    every submitted ``.py`` file importable under its own name.
    """
    if script != "simulate.py":
        return _run_script(Path(lab_dir), submission_files, trace_path, argv, script)
    from servesim.cli import main as simulate_main

    module = types.ModuleType("_infralab_inprocess_policies")
    module.__file__ = "policies.py"
    out, err = io.StringIO(), io.StringIO()
    with tempfile.TemporaryDirectory(prefix="infralab-inproc-") as tmp:
        output = Path(tmp) / "run.json"
        argv = ["--trace", str(trace_path), *argv, "--output", str(output)]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                exec(_compiled(submission_files["policies.py"], "policies.py"), module.__dict__)
                code = simulate_main(
                    argv, policies_module=module, lab_dir=Path(lab_dir), encode=compact_text
                )
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                traceback.print_exc()
                code = 1
        data = output.read_bytes() if output.is_file() else None
    return ChildResult(code, out.getvalue(), err.getvalue(), False, data, ISOLATION)


run_in_process.in_process = True


def compact_text(doc: dict, indent: int | None = None) -> str:
    """The run file's text as the sandboxed child writes it (``case_runner``: no whitespace,
    whatever ``--format`` asks), so a case run here and there gives the same bytes."""
    from servesim.runfile import dumps

    return dumps(doc, None)


@functools.lru_cache(maxsize=64)
def _compiled(source: bytes, filename: str) -> types.CodeType:
    """The code of a file, compiled once per process (a mutant runs every case of a unit)."""
    return compile(source.decode("utf-8"), filename, "exec")


def _fresh_module(name: str, source: bytes, filename: str, saved: dict) -> types.ModuleType:
    """A module made from ``source``, registered as ``sys.modules[name]`` (old one in ``saved``)."""
    module = types.ModuleType(name)
    module.__file__ = filename
    saved.setdefault(name, sys.modules.get(name))
    sys.modules[name] = module  # dataclasses look their module up while it executes
    exec(_compiled(source, filename), module.__dict__)
    return module


def _run_script(lab_dir: Path, files: dict[str, bytes], input_path, argv, script) -> ChildResult:
    """A given script of the lab folder, its imports of submitted files served from ``files``."""
    out, err = io.StringIO(), io.StringIO()
    saved = {}
    with tempfile.TemporaryDirectory(prefix="infralab-inproc-") as tmp:
        output = Path(tmp) / "answers.json"
        argv = ["--input", str(input_path), *argv, "--output", str(output)]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                for name, source in files.items():
                    if name.endswith(".py"):
                        _fresh_module(name[:-3], source, name, saved)
                path = lab_dir / script
                runner = _fresh_module("_infralab_script", path.read_bytes(), script, saved)
                code = runner.main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                for stem, module in saved.items():
                    if module is None:
                        sys.modules.pop(stem, None)
                    else:
                        sys.modules[stem] = module
        data = output.read_bytes() if output.is_file() else None
    return ChildResult(code, out.getvalue(), err.getvalue(), False, data, ISOLATION)
