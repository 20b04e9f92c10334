"""Dependencies by job: the core grades; a command needing an extra says which, in one line."""

from __future__ import annotations

import sys
import tomllib

import pytest

from grader.cli import main
from grader.course.release import requirements
from grader.units import CODE_ROOT

PYPROJECT = tomllib.loads((CODE_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
JOB_EXTRAS = ("site", "traces", "runner", "nbgrader", "similarity")


def names(requirements: list[str]) -> set[str]:
    return {r.split("[")[0].split(">")[0].split("=")[0].strip().lower() for r in requirements}


def test_core_leaves_the_other_jobs_to_extras():
    core = names(PYPROJECT["project"]["dependencies"])
    extras = PYPROJECT["project"]["optional-dependencies"]
    for extra in JOB_EXTRAS:
        assert not core & names(extras[extra]), extra
    assert {"numpy", "jinja2", "torch", "nbgrader", "latex2mathml"}.isdisjoint(core)
    assert f"infra-lab[{','.join(JOB_EXTRAS)}]" in extras["test"]


def test_bundle_requirements_pin_exactly_the_core():
    pins = requirements().split()
    assert names(pins) == names(PYPROJECT["project"]["dependencies"])
    assert all(pin.count("==") == 1 and pin.split("==")[1][0].isdigit() for pin in pins)


@pytest.mark.parametrize(
    ("blocked", "argv", "extra"),
    [
        ("numpy", ["trace", "check", "t.json"], "traces"),
        ("jinja2", ["site", "build", "--out", "site-out"], "site"),
        ("nbgrader", ["autograde", "--unit", "unit07", "--course", "course"], "nbgrader"),
        ("copydetect", ["similarity", "--unit", "unit07", "a", "b"], "similarity"),
    ],
)
def test_missing_extra_is_one_error_line(monkeypatch, tmp_path, capsys, blocked, argv, extra):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, blocked, None)  # the import fails as if not installed
    for module in [
        m
        for m in sys.modules
        if m.startswith(("grader.traces.", "grader.sitebuild", "grader.similarity."))
    ]:
        monkeypatch.delitem(sys.modules, module)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("infralab: error: this command needs the") and "\n" not in err
    assert f"'{extra}' extra ({blocked} is not installed)" in err
    assert list(tmp_path.iterdir()) == []
