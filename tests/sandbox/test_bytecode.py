"""The lab's bytecode, compiled once per batch and copied into each case folder: the child loads
the lab's modules from it, a submission's files always run from their source, and tracebacks
name the case folder."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from grader.sandbox import bytecode
from grader.sandbox.launch import prepare_case
from grader.units import load_unit

UNIT = load_unit("unit07")
IMPORT = "import sys; sys.path.insert(0, '.'); import servesim.engine, policies; "


@pytest.fixture
def warmed():
    bytecode._compiled.clear()
    bytecode.warm(UNIT.lab_dir)
    yield
    bytecode._compiled.clear()


def _python(case, code: str, *flags: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-I", "-S", "-B", *flags, "-c", code]
    return subprocess.run(command, cwd=case, capture_output=True, text=True, check=False)


def test_the_child_loads_the_lab_from_bytecode_and_the_submission_from_source(warmed, tmp_path):
    files = {"policies.py": (UNIT.solutions_dir / "policies.py").read_bytes()}
    case = prepare_case(tmp_path, UNIT.lab_dir, files, {})
    compiled = {p.relative_to(case).as_posix() for p in case.rglob("*.pyc")}
    assert any(name.startswith("servesim/__pycache__/engine.") for name in compiled)
    assert not any("policies." in name for name in compiled)
    done = _python(case, IMPORT + "print('ok')", "-v")
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
    assert "servesim/__pycache__/engine." in done.stderr  # "code object from ...pyc"
    assert "policies." + sys.implementation.cache_tag not in done.stderr


def test_a_submission_with_the_stubs_size_and_time_still_runs_its_own_code(warmed, tmp_path):
    """Were the starter stub's bytecode copied, Python would take it for a file of the same
    size and modification time: the submission's own code must run."""
    stub = UNIT.lab_dir / "policies.py"
    mine = b"MARK = 'mine'\n"
    mine += b"#" * (stub.stat().st_size - len(mine) - 1) + b"\n"
    case = prepare_case(tmp_path, UNIT.lab_dir, {"policies.py": mine}, {})
    stamp = stub.stat()
    os.utime(case / "policies.py", ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    done = _python(case, IMPORT + "print(policies.MARK)")
    assert done.returncode == 0 and done.stdout.strip() == "mine", done.stderr[-2000:]


def test_tracebacks_name_the_case_folder_not_the_graders_copy(warmed, tmp_path):
    case = prepare_case(tmp_path, UNIT.lab_dir, {}, {})
    done = _python(case, IMPORT + "print(servesim.engine.simulate.__code__.co_filename)")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == str(case / "servesim" / "engine.py")


def test_without_warming_nothing_is_copied(tmp_path):
    bytecode._compiled.clear()
    case = prepare_case(tmp_path, UNIT.lab_dir, {}, {})
    assert not list(case.rglob("*.pyc"))
