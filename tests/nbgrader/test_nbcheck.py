"""``grader.course.nbcheck``: the notebook's answer keys agree with the grader's golden runs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from grader.course import nbcheck
from grader.units import load_unit

UNIT = load_unit("unit07")


def golden_run(case_id: str) -> dict:
    """A golden run written by ``infralab golden`` (traces/<unit>/golden/<case>.json)."""
    path = UNIT.traces_dir / "golden" / f"{case_id}.json"
    return json.loads(path.read_text(encoding="utf-8"))["run"]


def tokens(run: dict, request_id: str) -> list[float]:
    return next(r for r in run["requests"] if r["id"] == request_id)["tokenTimesMs"]


def max_itl(run: dict, request_id: str) -> float:
    """The engine's own metric for the request (run-file field ``maxItlMs``)."""
    return next(r for r in run["requests"] if r["id"] == request_id)["maxItlMs"]


def test_mixed_key_matches_golden():
    key = nbcheck.answer_key(UNIT, "mixed")
    for policy, case in (("fcfs", "fcfs-mixed"), ("chunked", "chunked-mixed")):
        run = golden_run(case)
        for request in run["requests"]:
            got = key["times"][policy][request["id"]]
            assert got == {
                "arrival": request["arrivalMs"],
                "first": request["tokenTimesMs"][0],
                "finish": request["tokenTimesMs"][-1],
            }
        assert key["aMaxItl"][policy] == pytest.approx(max_itl(run, "A"))


def test_prefill_only_key_matches_golden():
    key = nbcheck.answer_key(UNIT, "prefill-only")
    for policy in ("fcfs", "chunked"):
        with_overhead = golden_run(f"{policy}-prefill-only")
        without = golden_run(f"{policy}-prefill-only-no-overhead")
        assert key["0.25"][policy] == tokens(with_overhead, "P")[-1]
        assert key["0"][policy] == tokens(without, "P")[-1]
        assert key["submissions"][policy] == len(with_overhead["events"])


def test_unseen_key_matches_golden():
    key = nbcheck.answer_key(UNIT, "unseen")
    for policy, case in (("fcfs", "fcfs-unseen"), ("chunked", "chunked-unseen-chunk4")):
        run = golden_run(case)
        assert key["U2_first"][policy] == tokens(run, "U2")[0]
        assert key["U1_stall"][policy] == pytest.approx(max_itl(run, "U1"))


def nbcheck_cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-I", "-m", "grader.course.nbcheck", *args, "--unit", "unit07"]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=False)


def test_cli_prints_the_key_as_json(tmp_path):
    # run from a folder that holds a file named like the trace: the key must not read it
    (tmp_path / "mixed").write_text('{"name": "mixed", "requests": []}')
    done = nbcheck_cli("expected", "mixed", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == nbcheck.answer_key(UNIT, "mixed")


def test_cli_errors_are_one_line():
    done = nbcheck_cli("expected", "nope")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "nbcheck: error: unknown notebook case 'nope' (known: mixed, prefill-only, unseen)"
    )


def test_policy_grading_refuses_a_link(tmp_path):
    link = tmp_path / "policies.py"
    link.symlink_to(UNIT.solutions_dir / "policies.py")
    done = nbcheck_cli("policies", "--submission", str(link))
    assert done.returncode == 2
    assert "not a regular file" in done.stderr


def test_a_key_is_remembered_by_what_computes_it(tmp_path, monkeypatch):
    """The stored key is the computed one; the same files elsewhere share it, and a changed
    plug-in (one of the inputs) gets a key of its own."""
    from grader import checkcache
    from grader.units import labs_dir

    monkeypatch.setenv(checkcache.CACHE_ENV, str(tmp_path / "cache"))
    computed = nbcheck.answer_keys(UNIT)["mixed"](UNIT)
    assert nbcheck.answer_key(UNIT, "mixed") == computed
    digest = nbcheck.key_inputs(UNIT, "mixed")
    assert checkcache.recall_doc(nbcheck.KEYS_KIND, digest) == computed
    assert nbcheck.answer_key(UNIT, "mixed") == computed  # read back
    assert digest != nbcheck.key_inputs(UNIT, "unseen")
    labs = tmp_path / "labs"
    shutil.copytree(labs_dir() / "unit07", labs / "unit07")
    moved = load_unit("unit07", labs)
    assert nbcheck.key_inputs(moved, "mixed") == digest
    plugin = labs / "unit07" / "notebook" / "answer_keys.py"
    plugin.write_text(plugin.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    assert nbcheck.key_inputs(moved, "mixed") != digest
