"""``infralab simulate`` runs with the cyclic garbage collector off (``grader/collector.py``,
``collector_off``) and an ``infralab`` process skips the interpreter's last collection pass at
exit (``grader/cli/main.py``).

The first is safe only while a run leaves no garbage in reference cycles that grows with the
run (reference counting frees everything else): checked here for the lab engine and the fast
path, every unit 08 policy, at two trace sizes.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys

import pytest
from servesim import cli as servesim_cli

from grader import reference
from grader.cli.main import main
from grader.units import CODE_ROOT, load_unit

U08 = load_unit("unit08")


def write_trace(tmp_path, requests: int):
    doc = reference.load_trace(U08, "azure-conv-slice").raw
    path = tmp_path / f"slice-{requests}.json"
    part = {**doc, "name": f"slice-{requests}", "requests": doc["requests"][:requests]}
    path.write_text(json.dumps(part), encoding="utf-8")
    return path


def simulate(tmp_path, trace, engine: str) -> None:
    out = tmp_path / "run.json"
    argv = ["simulate", "--unit", "unit08", "--reference", "--trace", str(trace)]
    argv += ["--policy", "all", "--budget", "512", "--engine", engine, "--output", str(out)]
    assert main(argv) == 0


@pytest.mark.parametrize("engine", ["lab", "auto"])
def test_cyclic_garbage_does_not_grow_with_the_run(tmp_path, capsys, engine):
    small, large = write_trace(tmp_path, 40), write_trace(tmp_path, 400)
    for trace in (small, large):  # modules and caches the command loads once
        simulate(tmp_path, trace, engine)
    found = {}
    collecting = gc.isenabled()
    gc.disable()
    try:
        for name, trace in (("small", small), ("large", large)):
            gc.collect()
            simulate(tmp_path, trace, engine)
            found[name] = gc.collect()  # objects that only a collection frees
    finally:
        if collecting:
            gc.enable()
    capsys.readouterr()
    # what is there (argparse's parsers, a few closures) is the same for ten times the requests
    assert found["large"] <= found["small"] < 200, found


def inside(code) -> bool:
    """Whether a frame of ``code`` is on the stack."""
    frame = sys._getframe()
    while frame is not None and frame.f_code is not code:
        frame = frame.f_back
    return frame is not None


def test_simulate_runs_without_collections(tmp_path, capsys):
    trace = write_trace(tmp_path, 400)
    passes, during = [], []
    script = servesim_cli.main.__code__  # simulate.py's main: the runs and the output

    def count(phase, info):
        if phase == "start":
            passes.append(info["generation"])
            during.append(inside(script))

    gc.enable()
    gc.callbacks.append(count)
    try:
        simulate(tmp_path, trace, "lab")
    finally:
        gc.callbacks.remove(count)
    capsys.readouterr()
    assert not any(during), passes
    assert gc.isenabled()  # as it was before the command
    with_collector = len(during)
    gc.callbacks.append(count)
    try:  # the callback sees the passes a run makes with the collector on
        servesim_cli.main(
            ["--trace", str(trace), "--policy", "all", "--output", str(tmp_path / "run.json")],
            policies_module=reference.solution_policies(U08),
            lab_dir=U08.lab_dir,
        )
    finally:
        gc.callbacks.remove(count)
    capsys.readouterr()
    assert sum(during[with_collector:]) > 10


def test_exit_skips_the_last_collection_pass():
    # an atexit callback registered before grader.cli.main's runs after it (last in, first out)
    script = (
        "import atexit, gc, os\n"
        "atexit.register(lambda: os.write(1, b'frozen %d' % gc.get_freeze_count()))\n"
        "from grader.cli.main import main\n"
        "main(['units'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=CODE_ROOT, capture_output=True, text=True, check=True
    )
    frozen = int(done.stdout.rsplit("frozen ", 1)[1])
    assert frozen > 1000  # the modules' objects, left to the operating system at exit
