"""A grader process keeps at most a few temp folders, whatever the size of its batch: a worker
grading a class on per-student variants assembles a lab folder and warms a sandbox template for
every student, and used to keep each one until it exited (2.5 MB of lab folder per student, the
templates in memory-backed ``/dev/shm``). The process that made a folder removes it; a forked
process never removes its parent's."""

from __future__ import annotations

import multiprocessing
import os
import shutil
from pathlib import Path

import pytest

from grader import labfolder
from grader.sandbox import template
from grader.tempfolders import TempFolders
from grader.units import Unit, load_unit
from grader.variants.store import as_variant

IGNORE = shutil.ignore_patterns("__pycache__")


def _variants(tmp_path: Path, count: int) -> list[Unit]:
    """``count`` variants of unit 07, as a class's are (each its own lab files)."""
    unit = load_unit("unit07")
    variants = []
    for n in range(count):
        shutil.copytree(unit.lab_dir, tmp_path / f"v{n}" / "lab", ignore=IGNORE)
        variants.append(as_variant(unit, tmp_path / f"v{n}", f"v{n}"))
    return variants


def test_a_process_keeps_only_the_newest_variants_lab_folders_and_templates(tmp_path):
    keep = labfolder._built.keep
    assert template._templates.keep == keep
    course = labfolder.built(load_unit("unit07"))
    variants = _variants(tmp_path, keep + 2)
    folders, roots = [], []
    for variant in variants:  # as a process grades one student's variant after another
        folders.append(labfolder.built(variant))
        template.warm(folders[-1])
        roots.append(Path(template._templates.get(str(folders[-1])).root))
    assert [f.is_dir() for f in folders] == [False] * 2 + [True] * keep
    assert [r.is_dir() for r in roots] == [False] * 2 + [True] * keep
    assert labfolder.built(variants[-1]) == folders[-1]  # the newest is still the one in use
    assert labfolder.built(variants[0]).is_dir()  # an evicted one is assembled again on demand
    assert labfolder.built(load_unit("unit07")) == course and course.is_dir()  # kept for life


def test_a_fill_that_fails_leaves_no_folder(tmp_path):
    table = TempFolders("infralab-test-", keep=2, place=lambda: str(tmp_path))

    def fill(folder: Path):
        (folder / "half").write_text("written")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        table.make("k", fill)
    assert list(tmp_path.iterdir()) == [] and "k" not in table


def test_a_held_folder_is_let_go_when_it_goes(tmp_path):
    held = []

    def hold(folder: Path) -> int:
        held.append(folder)
        return os.open(folder, os.O_RDONLY)

    table = TempFolders("infralab-test-", keep=1, place=lambda: str(tmp_path), hold=hold)
    table.make("a", lambda folder: folder)
    entry = table._entries["a"]
    table.make("b", lambda folder: folder)
    assert entry.fd is None and not held[0].exists() and held[1].exists()
    table.forget()
    assert not held[1].exists()


def _child(table: TempFolders, sent) -> None:
    table.forget()  # the parent's entry: dropped here, left on disk
    sent.send(str(table.make("child", lambda folder: folder)))


def test_a_forked_worker_removes_its_own_folders_and_never_its_parents(tmp_path):
    table = TempFolders("infralab-test-", keep=2, place=lambda: str(tmp_path))
    parents = table.make("parent", lambda folder: folder)
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    worker = context.Process(target=_child, args=(table, send))
    worker.start()
    childs = Path(receive.recv())
    worker.join()
    assert worker.exitcode == 0
    assert parents.is_dir() and not childs.exists()
    table.forget()
    assert not parents.exists()
