"""Every maker of a lab folder gives the lab folder students got before the engine copies left
``starter/``: the student zip, ``infralab release student``, ``infralab lab open`` and the
grader's own assembled folder hold the same files with the same bytes (and executable bits) as
the folder made the old way. No file of a lab folder carries a version stamp, so every byte is
compared. The folder runs with python3 alone: its public tests pass on the solution."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader import labfolder
from grader.cli.main import main
from grader.course import release
from grader.units import CODE_ROOT, Unit, load_unit, unit_ids

UNITS = unit_ids()
OLD_SKIP_DIRS = {"__pycache__", ".pytest_cache", "runs", ".hypothesis"}


@pytest.fixture(scope="module", params=UNITS)
def unit(request) -> Unit:
    return load_unit(request.param)


def made_the_old_way(unit: Unit, dest: Path) -> dict[str, tuple[bytes, bool]]:
    """The lab folder as it was made before (main at db8d167): ``starter sync`` copied each
    engine package the unit names into the unit's folder (``servesim/``, ``realdevice/``, every
    file but bytecode caches), and the student zip took every file of that folder but caches
    and runs. Relative path -> (bytes, executable)."""
    shutil.copytree(unit.lab_dir, dest)
    for package in unit.engine_packages:
        shutil.copytree(
            CODE_ROOT / package, dest / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    files = {}
    for path in sorted(dest.rglob("*")):
        rel = path.relative_to(dest)
        if path.is_file() and not OLD_SKIP_DIRS.intersection(rel.parts) and path.suffix != ".pyc":
            files[rel.as_posix()] = (path.read_bytes(), os.access(path, os.X_OK))
    return files


def folder_files(folder: Path) -> dict[str, tuple[bytes, bool]]:
    return {
        path.relative_to(folder).as_posix(): (path.read_bytes(), os.access(path, os.X_OK))
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def zip_files(archive: Path, root: str) -> dict[str, tuple[bytes, bool]]:
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
        assert all(name.startswith(f"{root}/") for name in names), names
        executable = {name: bool(zf.getinfo(name).external_attr >> 16 & 0o111) for name in names}
        return {name.removeprefix(f"{root}/"): (zf.read(name), executable[name]) for name in names}


@pytest.fixture(scope="module")
def old(unit, tmp_path_factory) -> dict[str, tuple[bytes, bool]]:
    files = made_the_old_way(unit, tmp_path_factory.mktemp("old") / "lab")
    assert "simulate.py" in files and "servesim/engine.py" in files  # a whole lab folder
    return files


def same(made: dict, old: dict) -> None:
    assert sorted(made) == sorted(old)
    differing = [name for name in old if made[name] != old[name]]
    assert not differing, f"bytes or executable bit differ: {differing[:5]}"


def test_the_student_zip_holds_the_old_lab_folder(unit, old, tmp_path):
    archive = release.build_student_zip(unit, tmp_path / release.student_zip_name(unit))
    same(zip_files(archive, release.lab_root(unit)), old)


def test_release_student_holds_the_old_lab_folder(unit, old, tmp_path, capsys):
    assert main(["release", "student", "--unit", unit.id, "--out", str(tmp_path)]) == 0
    same(zip_files(tmp_path / release.student_zip_name(unit), release.lab_root(unit)), old)


def test_lab_open_and_the_graders_folder_hold_the_old_lab_folder(unit, old, tmp_path, capsys):
    assert main(["lab", "open", "--unit", unit.id, str(tmp_path / "lab")]) == 0
    assert f"cd {tmp_path / 'lab'}" in capsys.readouterr().out
    same(folder_files(tmp_path / "lab"), old)
    same(folder_files(labfolder.built(unit)), old)


def test_the_opened_lab_runs_its_public_tests_with_python3_alone(unit, tmp_path, capsys):
    """A self-learner's one command, then the public tests with no site-packages: red on the
    stubs, green once the solution's files are in place."""
    lab = tmp_path / "lab"
    assert main(["lab", "open", "--unit", unit.id, str(lab)]) == 0
    command = [sys.executable, "-I", "-S", "run_tests.py"]
    red = subprocess.run(command, cwd=lab, capture_output=True, text=True, timeout=300)
    assert red.returncode == 1 and "not implemented yet" in red.stdout, red.stdout[-2000:]
    for name in unit.editable:
        shutil.copyfile(unit.solutions_dir / name, lab / name)
    green = subprocess.run(command, cwd=lab, capture_output=True, text=True, timeout=300)
    assert green.returncode == 0, green.stdout[-3000:] + green.stderr[-2000:]
    assert " passed" in green.stdout.splitlines()[-1]


def test_lab_open_refuses_a_folder_in_use_and_writes_nothing(unit, tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine\n", encoding="utf-8")
    assert main(["lab", "open", "--unit", unit.id, str(taken)]) == 2
    assert "already exists and is not an empty folder" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]
    assert [p.name for p in taken.iterdir()] == ["notes.txt"]


def test_a_unit_that_names_a_missing_engine_package_is_one_clear_error(unit, tmp_path):
    odd = Unit(unit.id, {**unit.doc, "engine_packages": ["servesim", "nosuchengine"]})
    with pytest.raises(labfolder.LabFolderError, match="engine package 'nosuchengine'"):
        labfolder.assemble(odd, tmp_path / "lab")
    assert not list(tmp_path.iterdir())


def test_no_engine_copy_is_committed_in_the_units_own_files(unit):
    tracked = subprocess.run(
        ["git", "ls-files", "--", str(unit.lab_dir)],
        cwd=CODE_ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    top = {
        Path(name).relative_to(unit.lab_dir.relative_to(CODE_ROOT)).parts[0]
        for name in tracked.stdout.split()
    }
    assert "simulate.py" in top
    assert not top & {"servesim", "realdevice", *unit.engine_packages}


def _build_in_worker(unit_id: str, sent) -> None:
    labfolder._built.forget()  # the parent's folders stay the parent's: this worker builds its own
    sent.send(str(labfolder.built(load_unit(unit_id))))


def test_a_forked_worker_removes_the_lab_folder_it_built_when_it_exits():
    """A batch's forked worker builds a variant's lab folder (``cohort_workers._prepare``) and
    exits through ``multiprocessing``, which skips ``atexit``: the folder still goes with it."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    worker = context.Process(target=_build_in_worker, args=("unit07", send))
    worker.start()
    folder = Path(receive.recv())
    worker.join()
    assert worker.exitcode == 0
    assert folder.name == "lab" and folder.parent.name.startswith(f"{labfolder.LAB_PREFIX}unit07-")
    assert not folder.parent.exists()
