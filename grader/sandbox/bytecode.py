"""The lab folder's own modules compiled once per batch, so that a sandboxed child does not
compile the simulator again for every submission (it runs with ``-B``: it reads bytecode and
never writes any).

    warm(lab_dir)                        # in the grader, before it forks its workers
    install(case, lab_dir, skip=names)   # into each fresh case folder

Only the lab's files get bytecode, never a file the submission provides (``skip``): what runs
of a submission is always its source. Python accepts a bytecode file only when the source's
size and modification time match the ones it records (``prepare_case`` copies with the times
kept), and it names the case folder's source in every code object it loads, so tracebacks never
show where the grader keeps its copy. Without ``warm`` (one submission graded on its own),
``install`` does nothing and the child compiles as before.
"""

from __future__ import annotations

import atexit
import importlib.util
import py_compile
import shutil
import tempfile
from pathlib import Path

from .host import scratch_dir

_compiled: dict[Path, Path] = {}  # lab folder -> folder holding its bytecode, same layout
LEFT_OUT = ("tests", "runs")  # top-level folders never copied into a case folder


def warm(lab_dir: Path) -> None:
    """Compile every module of ``lab_dir`` (once per process) into a private temp folder that is
    removed when this process exits normally; forked workers inherit it and never remove it."""
    lab_dir = Path(lab_dir).resolve()
    if lab_dir in _compiled:
        return
    out = Path(tempfile.mkdtemp(prefix="infralab-pyc-", dir=scratch_dir()))
    atexit.register(shutil.rmtree, out, True)
    for source in sorted(lab_dir.rglob("*.py")):
        relative = source.relative_to(lab_dir)
        if relative.parts[0] in LEFT_OUT or "__pycache__" in relative.parts:
            continue
        target = out / importlib.util.cache_from_source(str(relative))
        try:
            py_compile.compile(str(source), cfile=str(target), doraise=True)
        except py_compile.PyCompileError:
            continue  # the child reports it when it imports the file
    _compiled[lab_dir] = out


def install(case: Path, lab_dir: Path, skip: set[str]) -> None:
    """Copy the warmed bytecode of ``lab_dir`` into ``case``, except that of the files named in
    ``skip`` (paths relative to the lab folder, as the submission names them)."""
    compiled = _compiled.get(Path(lab_dir).resolve())
    if compiled is None:
        return
    skipped = {Path(name) for name in skip}
    for pyc in compiled.rglob("*.pyc"):
        relative = pyc.relative_to(compiled)
        source = Path(importlib.util.source_from_cache(str(relative)))
        if source in skipped or not (case / source).is_file():
            continue
        target = case / relative
        target.parent.mkdir(exist_ok=True)
        shutil.copyfile(pyc, target)
