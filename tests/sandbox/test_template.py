"""The pristine case folder, built once per batch with the lab's bytecode: each case folder is
hard links to it, the child loads the lab's modules from bytecode and a submission's files from
their source, tracebacks name the case folder, and nothing written into a case folder reaches
the template."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader.labfolder import built
from grader.sandbox import SandboxError, scratch_dir, template
from grader.sandbox.launch import prepare_case
from grader.units import load_unit

UNIT = load_unit("unit07")
LAB = built(UNIT)  # the lab folder as graded: the unit's own files and the engine
IMPORT = "import sys; sys.path.insert(0, '.'); import servesim.engine, policies; "
WRITE_BITS = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH


@pytest.fixture
def warmed():
    template.forget()
    template.warm(LAB)
    yield template._templates.get(str(LAB))
    template.forget()


@pytest.fixture
def beside():
    """A folder on the template's file system (where the grader makes its case folders)."""
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as folder:
        yield Path(folder)


def _python(case, code: str, *flags: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-I", "-S", "-B", *flags, "-c", code]
    return subprocess.run(command, cwd=case, capture_output=True, text=True, check=False)


def test_the_child_loads_the_lab_from_bytecode_and_the_submission_from_source(warmed, tmp_path):
    files = {"policies.py": (UNIT.solutions_dir / "policies.py").read_bytes()}
    case = prepare_case(tmp_path, LAB, files, {})
    compiled = {p.relative_to(case).as_posix() for p in case.rglob("*.pyc")}
    assert any(name.startswith("servesim/__pycache__/engine.") for name in compiled)
    assert not any("policies." in name for name in compiled)
    done = _python(case, IMPORT + "print('ok')", "-v")
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
    assert "servesim/__pycache__/engine." in done.stderr  # "code object from ...pyc"
    assert "policies." + sys.implementation.cache_tag not in done.stderr


def test_a_submission_with_the_stubs_size_and_time_still_runs_its_own_code(warmed, beside):
    """Were the starter stub's bytecode linked in, Python would take it for a file of the same
    size and modification time: the submission's own code must run."""
    stub = LAB / "policies.py"
    mine = b"MARK = 'mine'\n"
    mine += b"#" * (stub.stat().st_size - len(mine) - 1) + b"\n"
    case = prepare_case(beside, LAB, {"./policies.py": mine}, {})
    stamp = stub.stat()
    os.utime(case / "policies.py", ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    done = _python(case, IMPORT + "print(policies.MARK)")
    assert done.returncode == 0 and done.stdout.strip() == "mine", done.stderr[-2000:]


def test_tracebacks_name_the_case_folder_not_the_graders_copy(warmed, beside):
    case = prepare_case(beside, LAB, {}, {})
    done = _python(case, IMPORT + "print(servesim.engine.simulate.__code__.co_filename)")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == str(case / "servesim" / "engine.py")


def test_case_folders_link_a_read_only_template_and_write_given_files_anew(warmed, beside):
    engine = Path("servesim", "engine.py")
    given = {"policies.py": b"MINE = 1\n", "servesim/engine.py": b"ENGINE = 'mine'\n"}
    case = prepare_case(beside, LAB, given, {"extra.py": b"EXTRA = 1\n"})
    for name in warmed.files:
        path = Path(warmed.root, name)
        assert not path.stat().st_mode & WRITE_BITS, name
    linked = case / "servesim" / "state.py"
    assert linked.stat().st_ino == Path(warmed.root, "servesim", "state.py").stat().st_ino
    for name, data in [*given.items(), ("extra.py", b"EXTRA = 1\n")]:
        assert (case / name).read_bytes() == data and (case / name).stat().st_nlink == 1
    assert Path(warmed.root, engine).read_bytes() == (LAB / engine).read_bytes()
    assert not list((case / "servesim" / "__pycache__").glob("engine.*"))
    for folder in warmed.folders:
        assert (case / folder).stat().st_ino != Path(warmed.root, folder).stat().st_ino
        assert (case / folder).stat().st_mode & 0o777 == 0o755


def test_a_file_name_that_leaves_the_lab_folder_is_refused(warmed, beside):
    with pytest.raises(SandboxError, match="escapes the lab folder"):
        prepare_case(beside, LAB, {"../policies.py": b""}, {})


def test_without_warming_the_lab_is_copied_without_bytecode(tmp_path):
    template.forget()
    case = prepare_case(tmp_path, LAB, {}, {})
    assert not list(case.rglob("*.pyc"))
    assert (case / "servesim" / "engine.py").stat().st_nlink == 1
    assert not (case / "tests").exists()
