"""Per-student variants in tests: one test secret and the units' variants, built once a process
(in the run's own variant cache, ``conftest.pytest_configure``)."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import nbformat

from grader.units import load_unit
from grader.variants import drawn, keys, store

SECRET = b"test-only-variant-secret-0123456789"


def write_secret(folder: Path) -> Path:
    path = Path(folder) / "variant.secret"
    path.write_bytes(SECRET + b"\n")
    return path


@functools.cache
def variant_of(unit_id: str, student: str = "s001") -> store.VariantUnit:
    """``student``'s variant of ``unit_id`` under the test secret."""
    return store.variant_unit(load_unit(unit_id), keys.variant_key(SECRET, student))


def variant08(student: str = "s001") -> store.VariantUnit:
    return variant_of("unit08", student)


def assert_own_traces(unit, one, two) -> set[str]:
    """Students ``one`` and ``two`` each draw their own version of every trace ``unit`` varies
    (different from each other's and the fixed set's), and every other hidden trace stays the
    fixed set's bytes. Returns the names of the hidden traces that stay."""
    for name in drawn.hidden_names(unit):
        texts = {(u.traces_dir / "hidden" / f"{name}.json").read_bytes() for u in (one, two, unit)}
        assert len(texts) == 3, name
    for name in drawn.public_names(unit):
        texts = {(u.lab_dir / drawn.public_file(name)).read_bytes() for u in (one, two, unit)}
        assert len(texts) == 3, name
    kept = {p.name for p in (unit.traces_dir / "hidden").glob("*.json")}
    kept -= {f"{name}.json" for name in drawn.hidden_names(unit)}
    for name in kept:
        fixed = (unit.traces_dir / "hidden" / name).read_bytes()
        assert all((u.traces_dir / "hidden" / name).read_bytes() == fixed for u in (one, two))
    return kept


def expected_key(unit_id: str, key: str, student: str, secret) -> dict:
    """A student's answer key by the project's command: ``nbcheck expected --student``."""
    done = subprocess.run(
        [sys.executable, "-m", "grader.course.nbcheck", "expected", "--unit", unit_id, key,
         "--student", student, "--secret", str(secret)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


MARK = "ANSWERS-JSON:"  # where a notebook run's printed answers start


def notebook_cells(notebook: Path, *grade_ids: str) -> list:
    """The cells of ``notebook`` with these nbgrader ``grade_ids``, in that order."""
    nb = nbformat.read(notebook, as_version=4)
    found = {cell.metadata["nbgrader"]["grade_id"]: cell for cell in nb.cells}
    return [found[grade_id] for grade_id in grade_ids]


def notebook_answers(notebook: Path, lab, grade_ids: tuple[str, ...], answer: str):
    """``answer`` (a Python expression over the notebook's variables) as the notebook's own
    cells ``grade_ids`` (setup, runs, model solutions and their asserts) compute it in ``lab``,
    run with the lab's Python as a student's kernel would."""
    code = "\n\n".join(cell.source for cell in notebook_cells(notebook, *grade_ids))
    code += f"\nprint({MARK!r} + json.dumps({answer}))\n"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=lab, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.rsplit(MARK, 1)[1])
