"""The fast tier (``bash scripts/test.sh --fast``) touches every package with its own tests, and the
whole suite stays what the README's test command and CI run."""

from __future__ import annotations

import re
import subprocess
import sys

from fasttier import FAST, SLOW_IN_FAST

from grader.units import REPO_ROOT

PYTEST = [sys.executable, "-m", "pytest", "-p", "no:xdist"]
SOURCE_ROOTS = ("grader", "servesim", "realdevice")


def packages_on_disk() -> set[str]:
    """Every Python package of the project (a folder with ``__init__.py``), and every lab."""
    found = {
        str(init.parent.relative_to(REPO_ROOT)).replace("/", ".")
        for root in SOURCE_ROOTS
        for init in (REPO_ROOT / root).rglob("__init__.py")
    }
    labs = {f"labs/{p.parent.name}" for p in (REPO_ROOT / "labs").glob("*/unit.yaml")}
    return found | labs


def uses(source: str, package: str) -> bool:
    """Whether a test file's source imports ``package`` (for a lab: names the unit)."""
    if package.startswith("labs/"):
        return package.removeprefix("labs/").lower() in source.lower()
    parent, _, leaf = package.rpartition(".")
    name = re.escape(package)
    own = [rf"from {name}(\.\w+)* import", rf"import {name}\b"]
    if parent:
        own.append(rf"from {re.escape(parent)} import .*\b{leaf}\b")
    else:  # the top package: its own modules, not a subpackage's
        subpackages = sorted(
            p.split(".")[1] for p in packages_on_disk() if p.startswith(f"{package}.")
        )
        others = rf"(?!\.({'|'.join(subpackages)})\b)" if subpackages else ""
        own[0] = rf"from {name}{others}(\.\w+)? import"
    return re.search(rf"^\s*({'|'.join(own)})", source, re.MULTILINE) is not None


def test_every_package_has_fast_tests_of_its_own():
    assert set(FAST) == packages_on_disk()
    for package, paths in FAST.items():
        assert paths, package
        for path in paths:
            source = (REPO_ROOT / path).read_text(encoding="utf-8")
            assert uses(source, package), f"{path} does not use {package}"


def test_every_slow_test_left_out_is_a_test_of_a_fast_file():
    files = {path for paths in FAST.values() for path in paths}
    for entry in SLOW_IN_FAST:
        path, name = entry.split("::")
        assert path in files, entry
        source = (REPO_ROOT / path).read_text(encoding="utf-8")
        assert re.search(rf"^def {name}\(", source, re.MULTILINE), entry


def test_the_fast_marker_selects_the_fast_files_only():
    fast, other = FAST["servesim"][0], "tests/test_scripts.py"
    collected = subprocess.run(
        [*PYTEST, "--collect-only", "-q", "-m", "fast and not serial", fast, other],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert collected.returncode == 0, collected.stdout[-2000:]
    files = {line.split("::")[0] for line in collected.stdout.splitlines() if "::" in line}
    assert files == {fast}


def test_the_whole_suite_stays_the_readme_command_and_ci():
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert [line for line in ci if "test.sh" in line] == ["bash scripts/test.sh"]
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert "bash scripts/test.sh --fast" in readme
    assert re.search(r"^bash scripts/test\.sh +#", readme, re.MULTILINE)  # the whole suite
