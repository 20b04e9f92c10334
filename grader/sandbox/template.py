"""The pristine case folder of a lab, built once per batch, of which every case folder is made
with hard links, so that a child neither compiles the simulator again nor costs the grader a
copy of the lab per submission (the child runs with ``-B``: it reads bytecode, writes none).

    warm(lab_dir)                          # in the grader, before it forks its workers
    lay_out(case, lab_dir, provided)       # each fresh case folder, before the files are written

The template is the lab folder without ``LEFT_OUT`` and without any bytecode of its own, plus
the lab's modules compiled by the grader; every file in it is read-only (no write bit for
anyone), owned by the grader. A case folder gets fresh folders and a hard link to each file of
the template, except the files a submission provides (``provided``) and their bytecode: what
runs of a submission is always its source, and ``launch`` writes those as new files, never
through a link. Nothing the child does can reach the template through a link: bubblewrap binds
the case folder read-only (a mount the child cannot remount writable, not even from a user
namespace of its own), and without bubblewrap the child's uid is neither the files' owner nor
allowed to write them or their folders (``test_hardening.py::
test_a_case_cannot_alter_the_lab_of_later_submissions``).

Python accepts a bytecode file only when the source's size and modification time match the
ones it records (the template's sources keep the lab's times, and a link shares them), and it
names the case folder's source in every code object it loads, so tracebacks never show where
the grader keeps the template. Without ``warm`` (one submission graded on its own), ``lay_out``
copies the lab folder (no bytecode) and the child compiles as before. Where a link cannot be
made (the case folder on another file system), the template's files are copied.
"""

from __future__ import annotations

import importlib.util
import os
import py_compile
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from ..tempfolders import TempFolders, hold_folder
from .host import TEMPLATE_PREFIX, scratch_dir

LEFT_OUT = ("tests", "runs")  # folders never copied into a case folder
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", *LEFT_OUT)  # nor the lab's bytecode
READ_ONLY = ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
FOLDER_MODE = 0o755


@dataclass(frozen=True)
class Template:
    root: str
    folders: tuple[str, ...]  # relative, parents first
    files: tuple[str, ...]  # relative, sources and bytecode


# absolute lab folder -> its template; the four newest kept (a batch graded on per-student
# variants warms one lab per student)
_templates = TempFolders(TEMPLATE_PREFIX, keep=4, place=scratch_dir, hold=hold_folder)


def warm(lab_dir: Path) -> None:
    """Build the template of ``lab_dir`` (once per process, while it is among the four newest)
    in a private temp folder, held so that no sweep takes it (``host.sweep_folders``). The
    process that built it removes it when it is evicted and when the process exits (SIGTERM
    included: ``launch``; a forked ``multiprocessing`` worker too); forked workers inherit it and
    never remove it; should the process be killed outright, the next grader process removes it
    (``host.sweep_folders``)."""
    key = os.path.abspath(lab_dir)
    if _templates.get(key) is None:
        _templates.make(key, lambda holder: _build(key, holder / "lab"))


def _build(lab_dir: str, root: Path) -> Template:
    shutil.copytree(lab_dir, root, ignore=IGNORED)
    for source in sorted(root.rglob("*.py")):
        relative = source.relative_to(root)
        target = root / importlib.util.cache_from_source(str(relative))
        try:
            py_compile.compile(str(source), cfile=str(target), dfile=str(relative), doraise=True)
        except py_compile.PyCompileError:
            continue  # the child reports it when it imports the file
    folders, files = [], []
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        if path.is_dir():
            folders.append(relative)
            path.chmod(FOLDER_MODE)
        else:
            files.append(relative)
            path.chmod(path.stat().st_mode & READ_ONLY)
    return Template(str(root), tuple(folders), tuple(files))


def forget() -> None:
    """Drop every template of this process from its table (tests; the folders go at exit)."""
    _templates.forget()


def lay_out(case: Path, lab_dir: Path, provided: set[str]) -> None:
    """Make the case folder ``case`` (it must not exist) from the template of ``lab_dir``,
    without the files named in ``provided`` (normalised paths relative to the lab folder) and
    their bytecode; a plain copy of ``lab_dir`` when it was not warmed."""
    template = _templates.get(os.path.abspath(lab_dir))
    if template is None:
        shutil.copytree(lab_dir, case, ignore=IGNORED)
        return
    skip = set(provided)
    skip.update(importlib.util.cache_from_source(name) for name in provided if name.endswith(".py"))
    here, there = f"{template.root}/", f"{case}/"
    for folder in ("", *template.folders):
        os.mkdir(there + folder)
        os.chmod(there + folder, FOLDER_MODE)
    place = os.link
    for name in template.files:
        if name in skip:
            continue
        try:
            place(here + name, there + name)
        except OSError:  # another file system: copies from here on
            if place is not os.link:
                raise
            place = shutil.copy2
            place(here + name, there + name)
