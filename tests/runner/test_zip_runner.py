"""The student zip ships the real-device runner, so it must start from the unzipped folder:
with the install line its README gives (PyTorch, the CPU build is enough) and the folder's own
``realdevice``/``servesim``, a finished lab runs ``run_gpu.py`` and writes a run file the grader
verifies."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from grader.course.release import build_student_zip, lab_root
from grader.units import load_unit
from grader.verify import verify_run

KV64 = ("--device-profile", "devices/kv-64-pages.json", "--budget", "64")
RUNS = {
    "unit07": ["--trace", "mixed", "--policy", "both", "--chunk", "2"],
    "unit08": ["--trace", "lifo-victim", *KV64, "--policy", "paged"],
}


@pytest.mark.parametrize("unit_id", sorted(RUNS))
def test_runner_starts_from_the_unzipped_lab(unit_id, tmp_path, torch_cpu):
    unit = load_unit(unit_id)
    with zipfile.ZipFile(build_student_zip(unit, tmp_path / "lab.zip")) as archive:
        archive.extractall(tmp_path / "out")
    folder = tmp_path / "out" / lab_root(unit)
    assert "pip install torch" in (folder / "README.md").read_text(encoding="utf-8")
    for name in unit.editable:  # a finished lab: the reference's files in place of the stubs
        shutil.copy(unit.solutions_dir / name, folder / name)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = folder / "runs" / "real.json"
    done = subprocess.run(
        [sys.executable, "run_gpu.py", *RUNS[unit_id], "--output", str(out)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(out.read_text(encoding="utf-8"))
    for run in doc["runs"]:
        assert verify_run(run, doc["trace"], run["device"], timing="measured") == []
    # run_gpu.py puts its own folder first on sys.path: the zip's packages are the ones used
    probe = (
        "import sys; from importlib.util import find_spec; sys.path.insert(0, '.'); "
        "print(find_spec('realdevice').origin); print(find_spec('servesim').origin)"
    )
    where = subprocess.run(
        [sys.executable, "-c", probe], cwd=folder, env=env, capture_output=True, text=True
    )
    assert where.returncode == 0, where.stderr
    for line in where.stdout.splitlines():
        assert line.startswith(str(folder)), line
