"""What every student zip must not hold: hidden traces, golden runs, grader code, solutions.

Shared by the fixed release's tests (``tests/sandbox/test_release.py``) and the per-student
variants' (``tests/grader/test_variant_release.py``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path


def infralab(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """``infralab ARGS`` as a TA types it, from ``cwd``; its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "grader.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=cwd,
    )


def solution_lines(unit) -> list[str]:
    """Non-trivial lines of the reference function bodies (inside the solution markers)."""
    text = (unit.solutions_dir / "policies.py").read_text()
    bodies = re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", text, re.S)
    lines = [line.strip() for body in bodies for line in body.splitlines()]
    return [line for line in lines if len(line) >= 20]


def assert_nothing_secret(student_zip: Path, unit, common: int = 0) -> None:
    """No hidden trace, golden run, grader code or solution body in the unit's student zip:
    at most ``common`` distinct solution lines in any one file."""
    hidden = [json.loads(p.read_text()) for p in (unit.traces_dir / "hidden").glob("*.json")]
    assert hidden, "no hidden traces to look for"
    body_lines = solution_lines(unit)
    assert len(body_lines) >= 4
    with zipfile.ZipFile(student_zip) as archive:
        names = archive.namelist()
        assert names and all(n.startswith(f"infra-lab-{unit.id}/") for n in names)
        assert not [n for n in names if re.search(r"(^|/)(golden|hidden|grader|solutions)/", n)]
        for name in names:
            text = archive.read(name).decode("utf-8", "replace")
            assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text, name
            leaked = {line for line in body_lines if line in text}
            assert len(leaked) <= common, (name, sorted(leaked))
            assert "grade_submission" not in text and "import grader" not in text, name
            if name.endswith(".json"):
                doc = json.loads(text)
                if isinstance(doc, dict) and "requests" in doc:
                    assert all(doc["requests"] != h["requests"] for h in hidden), name
                assert "engineVersion" not in doc, f"{name} looks like a golden file"
    public = {p.name for p in (unit.lab_dir / "traces").glob("*.json")}
    assert {n.rsplit("/", 1)[1] for n in names if "/traces/" in n} == public


def run_autograder(root: Path, submission: dict[str, bytes], metadata: dict | None = None) -> dict:
    """Gradescope's run of an unpacked bundle (``root/source``) on ``submission``, with
    ``submission_metadata.json`` when given; its results.json."""
    shutil.rmtree(root / "submission", ignore_errors=True)
    shutil.rmtree(root / "results", ignore_errors=True)
    (root / "submission").mkdir()
    for name, data in submission.items():
        (root / "submission" / name).write_bytes(data)
    if metadata is not None:
        (root / "submission_metadata.json").write_text(json.dumps(metadata))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "INFRALAB_AUTOGRADER_ROOT": str(root),
        "INFRALAB_PYTHON": sys.executable,
    }
    done = subprocess.run(
        ["bash", str(root / "source" / "run_autograder")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd="/",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((root / "results" / "results.json").read_text())
