"""The lab's standard-library test runner (run_tests.py) under a Python without pytest:
red on the stubs, green with the solution, and the same failures and messages as pytest."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from labtools import copy_lab
from unit08.u08tools import copy_lab08

from grader.units import load_unit

NO_SITE = [sys.executable, "-I", "-S"]  # no site-packages: pytest cannot be imported


def run_tests(lab, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*NO_SITE, "run_tests.py", *args], cwd=lab, capture_output=True, text=True, timeout=120
    )


def run_pytest(lab) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "1000"}  # pytest shortens summary lines to the terminal
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=lab,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def failures(output: str) -> dict[str, str]:
    return dict(re.findall(r"^FAILED (\S+) - (.*)$", output, re.M))


def mutant(lab) -> None:
    """The solution with chunks one token too long: the chunked timelines diverge."""
    path = lab / "policies.py"
    text = path.read_text(encoding="utf-8")
    assert "min(chunk, head.remaining_prefill)" in text
    path.write_text(text.replace("min(chunk, ", "min(chunk + 1, "), encoding="utf-8")


def test_this_python_has_no_pytest_without_site():
    probe = subprocess.run([*NO_SITE, "-c", "import pytest"], capture_output=True, text=True)
    assert probe.returncode != 0 and "No module named 'pytest'" in probe.stderr


def test_red_on_the_stubs(tmp_path):
    lab = copy_lab(tmp_path / "lab", solution=False)
    result = run_tests(lab)
    assert result.returncode == 1, result.stdout + result.stderr
    found = failures(result.stdout)
    assert len(found) >= 10
    named = re.compile(
        r"\w+\(\) in policies\.py is not implemented yet \(part \d of the handout\)$"
    )
    assert all(named.search(m) for m in found.values()), found
    assert re.search(r"^\d+ failed, 0 passed$", result.stdout, re.M)


def test_green_with_the_solution(tmp_path):
    lab = copy_lab(tmp_path / "lab", solution=True)
    result = run_tests(lab)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^\d+ passed$", result.stdout, re.M) and "FAILED" not in result.stdout


@pytest.mark.parametrize("variant", ["stubs", "mutant"])
def test_same_failures_and_messages_as_pytest(tmp_path, variant):
    lab = copy_lab(tmp_path / "lab", solution=variant == "mutant")
    if variant == "mutant":
        mutant(lab)
    ours, theirs = run_tests(lab), run_pytest(lab)
    assert ours.returncode == theirs.returncode == 1, theirs.stdout
    mine, pytests = failures(ours.stdout), failures(theirs.stdout)
    assert set(mine) == set(pytests) and mine
    explicit = {k: v for k, v in pytests.items() if not v.startswith("assert")}
    assert explicit and {k: mine[k] for k in explicit} == explicit
    if variant == "mutant":
        assert any("first differing token time: request" in m for m in mine.values())


def test_same_tests_are_collected(tmp_path):
    lab = copy_lab(tmp_path / "lab", solution=False)
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=lab,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    ids = {line for line in collected.splitlines() if "::" in line}
    assert ids and ids == set(failures(run_tests(lab).stdout))


def parts_done(dest, numbers: set[int]):
    """Unit 08's lab with the reference code of the parts numbered ``numbers`` only."""
    from grader.course.starter import stub_source
    from grader.parts import unit_parts

    unit = load_unit("unit08")
    lab = copy_lab08(dest, solution=False)
    keep = {f for p in unit_parts(unit) if p.number in numbers for f in p.functions}
    for name in unit.editable:
        source = (unit.solutions_dir / name).read_text(encoding="utf-8")
        done = {f.split(":")[1] for f in keep if f.startswith(f"{name}:")}
        (lab / name).write_text(stub_source(source, name, keep=done), encoding="utf-8")
    return lab, unit


def test_parts_one_to_three_are_green_and_the_rest_skip_with_a_reason(tmp_path):
    """A student who does the core parts sees green tests and skipped ones, each with a
    one-line reason naming the part and the function, with or without pytest."""
    lab, _ = parts_done(tmp_path / "lab", {1, 2, 3})
    ours = run_tests(lab)
    assert ours.returncode == 0, ours.stdout[-3000:]
    assert "FAILED" not in ours.stdout
    skipped = dict(re.findall(r"^SKIPPED (\S+) - (.*)$", ours.stdout, re.M))
    assert {n.split("::")[0] for n in skipped} == {
        "tests/test_part4_fair_optional.py",
        "tests/test_part5_challenge.py",
        "tests/test_part6_timed_optional.py",
    }
    for reason in skipped.values():
        assert re.fullmatch(
            r"part [456] \([\w ]+\) is (optional|a challenge) and not started yet: \w+\(\) in "
            r"policies\.py is not implemented yet; its tests run once you start it",
            reason,
        ), reason
    assert re.search(rf"^\d+ passed, {len(skipped)} skipped$", ours.stdout, re.M)
    theirs = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"],
        cwd=lab,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "1000"},
    )
    assert theirs.returncode == 0, theirs.stdout[-3000:]
    reasons = set(re.findall(r"^SKIPPED \[\d+\] \S+: (.*)$", theirs.stdout, re.M))
    assert reasons == set(skipped.values())


def test_a_started_optional_part_runs_its_tests(tmp_path):
    """Once fair() is written (here: the reference), its tests run and pass."""
    lab, _ = parts_done(tmp_path / "lab", {1, 2, 3, 4})
    ours = run_tests(lab, "-k", "part4")
    assert ours.returncode == 0 and "SKIPPED" not in ours.stdout, ours.stdout
