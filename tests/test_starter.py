"""The lab folder as shipped: generated from the solutions, red on the stubs, green solved."""

import ast
import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from labtools import UNIT, copy_lab

from grader import labfolder
from grader.course import starter
from grader.units import CODE_ROOT


def public_pytest(lab: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=lab,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_starter_files_are_in_step_with_solutions_and_unit_yaml():
    stale = starter.stale_files(UNIT)
    assert not stale, f"run `infralab starter sync --unit unit07`; stale: {stale}"


def test_drift_is_caught(tmp_path):
    lab = tmp_path / "lab"
    shutil.copytree(UNIT.lab_dir, lab, ignore=shutil.ignore_patterns(*labfolder.LEFT_OUT))
    solutions = tmp_path / "solutions"
    shutil.copytree(UNIT.solutions_dir, solutions)
    doc = {**UNIT.doc, "lab_folder": str(lab), "solutions": str(solutions)}
    copy = dataclasses.replace(UNIT, doc=doc)
    assert starter.stale_files(copy) == []
    policies = solutions / "policies.py"
    policies.write_text(policies.read_text().replace("earliest one", "first one"))
    assert starter.stale_files(copy) == [lab / "policies.py"]
    assert starter.sync(copy) == [lab / "policies.py"]
    assert starter.stale_files(copy) == []


def test_an_engine_copy_in_the_units_own_files_is_stale_and_removed(tmp_path):
    """The engine joins a lab folder when it is made; a copy left in ``starter/<unit>/``
    would shadow its one source, so assembling refuses it and ``starter sync`` removes it."""
    lab = tmp_path / "lab"
    shutil.copytree(UNIT.lab_dir, lab, ignore=shutil.ignore_patterns(*labfolder.LEFT_OUT))
    copy = dataclasses.replace(UNIT, doc={**UNIT.doc, "lab_folder": str(lab)})
    stale = lab / "servesim" / "engine.py"
    stale.parent.mkdir()
    stale.write_text("OLD = 1\n", encoding="utf-8")
    assert starter.stale_files(copy) == [stale]
    with pytest.raises(labfolder.LabFolderError, match="copy of an engine package"):
        labfolder.lab_files(copy)
    assert starter.sync(copy) == [stale]
    assert starter.stale_files(copy) == [] and not stale.exists()
    assert labfolder.lab_files(copy)["servesim/engine.py"] == CODE_ROOT / "servesim/engine.py"


def test_stub_keeps_the_contract_and_hides_the_solution():
    stub = (UNIT.lab_dir / "policies.py").read_text()
    solution = (UNIT.solutions_dir / "policies.py").read_text()
    assert "### BEGIN SOLUTION" not in stub
    assert 'raise NotImplementedError("fcfs() is not implemented yet")' in stub
    assert 'raise NotImplementedError("chunked() is not implemented yet")' in stub
    for line in solution.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0].splitlines():
        if line.strip():
            assert line not in stub
    assert "Complete prefill first" in stub  # docstrings stay


def test_unbalanced_markers_are_rejected():
    with pytest.raises(starter.SolutionMarkerError, match="never closed"):
        starter.stub_source("def f():\n    ### BEGIN SOLUTION\n    return 1\n", "x.py")


def test_public_tests_fail_on_pristine_starter(tmp_path):
    done = public_pytest(copy_lab(tmp_path / "lab", solution=False))
    assert done.returncode == 1
    assert "fcfs() in policies.py is not implemented yet" in done.stdout
    assert "chunked() in policies.py is not implemented yet" in done.stdout
    assert " passed" not in done.stdout.splitlines()[-1]


def test_public_tests_pass_with_solutions(tmp_path):
    done = public_pytest(copy_lab(tmp_path / "lab", solution=True))
    assert done.returncode == 0, done.stdout[-3000:]


def test_public_tests_show_first_differing_token(tmp_path):
    lab = copy_lab(tmp_path / "lab", solution=True)
    policies = lab / "policies.py"
    # A plausible bug: chunked prefills before it decodes.
    wrong = policies.read_text().replace(
        "if view.running and (not decoded_last or not view.waiting):",
        "if view.running and not view.waiting:",
    )
    assert wrong != policies.read_text()
    policies.write_text(wrong)
    done = public_pytest(lab)
    assert done.returncode == 1
    assert "first differing token time: request A, token #2 (index 1): expected 3.50 ms, got" in (
        done.stdout
    )


STDLIB_ONLY = ["simulate.py", "policies.py", "servesim"]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_simulator_needs_only_the_standard_library():
    local = {"servesim", "policies"}
    for entry in STDLIB_ONLY:
        root = labfolder.built(UNIT) / entry
        for path in [root] if root.is_file() else sorted(root.rglob("*.py")):
            foreign = _imports(path) - set(sys.stdlib_module_names) - local
            assert not foreign, f"{path.name} imports {foreign}"
