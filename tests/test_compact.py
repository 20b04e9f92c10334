"""Compact run files: written by simulate.py, expanded back to exactly the full entry.

Every check compares the compact file, expanded by ``servesim.compact.expand_document``, with
the full file of the same run (``==`` on the whole document), so a field lost or reordered in
either direction fails. Preemptions come from unit 08's ``paged`` on small page pools.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import servesim
from hypothesis import given, settings
from hypothesis import strategies as st
from randomruns import request_rows, unit08_run
from servesim import cli
from servesim.compact import compact_run, expand_document, expand_run
from servesim.runfile import COMPACT_ABOVE_TOKENS, default_format

from grader import cli as infralab
from grader import reference, verify
from grader.units import load_unit
from grader.verify.runschema import validate_run_file

U07, U08 = load_unit("unit07"), load_unit("unit08")
AZURE = Path(__file__).resolve().parent / "data" / "azure-conv-1000.json"


def simulate(unit, tmp_path, *argv, fmt, policies=None):
    out = tmp_path / f"{fmt}.json"
    policies = policies or reference.solution_policies(unit)
    code = cli.main(
        [*argv, "--format", fmt, "--output", str(out)],
        policies_module=policies,
        lab_dir=unit.lab_dir,
    )
    assert code == 0
    return json.loads(out.read_text(encoding="utf-8")), out


@pytest.mark.parametrize("trace", ["mixed", "prefill-only", "unseen"])
def test_unit07_round_trip_and_schema(tmp_path, trace):
    full, _ = simulate(U07, tmp_path, "--trace", trace, "--policy", "both", fmt="full")
    compact, path = simulate(U07, tmp_path, "--trace", trace, "--policy", "both", fmt="compact")
    assert all(run["format"] == "compact" for run in compact["runs"])
    assert "\n" not in path.read_text(encoding="utf-8").rstrip("\n")  # unindented
    assert validate_run_file(U07, compact) is None
    assert validate_run_file(U07, full) is None
    assert expand_document(compact) == full


def test_schema_rejects_a_compact_run_with_token_times(tmp_path):
    compact, _ = simulate(U07, tmp_path, "--trace", "mixed", "--policy", "fcfs", fmt="compact")
    columns = compact["runs"][0]["requests"]
    columns["tokenTimesMs"] = [[1.0] for _ in columns["id"]]
    assert validate_run_file(U07, compact) is not None


def test_columns_of_different_lengths_are_refused(tmp_path):
    compact, _ = simulate(U07, tmp_path, "--trace", "mixed", "--policy", "fcfs", fmt="compact")
    compact["runs"][0]["requests"]["arrivalMs"].pop()
    with pytest.raises(ValueError, match=r"requests\.arrivalMs has 2 entries, not 3"):
        expand_document(compact)


def test_idle_starts_and_absent_fields_round_trip():
    """A gap in the arrivals (the device idles) and optional fields only some requests have."""
    rows = [
        {"id": "a", "arrivalMs": 5.0, "inputTokens": 4, "outputTokens": 3, "tenant": "t1"},
        {"id": "b", "arrivalMs": 6.0, "inputTokens": 2, "outputTokens": 2, "deadlineMs": 90.0},
        {"id": "c", "arrivalMs": 500.0, "inputTokens": 3, "outputTokens": 4},
    ]
    full, timeline = unit08_run(rows, "budgeted", 8, 0, None)
    compact = compact_run(full, timeline)
    assert [start for _, start in compact["idleStarts"]] == [5.0, 500.0]
    assert compact["requests"]["tenant"] == ["t1", None, None]
    assert compact["requests"]["deadlineMs"] == [None, 90.0, None]
    assert expand_run(compact) == full


@pytest.mark.parametrize(
    "trace, profile",
    [("kv-pages", "kv-64-pages.json"), ("burst", None), ("tenants", None), ("unseen", None)],
)
def test_unit08_round_trip(tmp_path, trace, profile):
    argv = ["--trace", trace, "--policy", "all"]
    if profile:
        argv += ["--device-profile", str(U08.lab_dir / "devices" / profile)]
    full, _ = simulate(U08, tmp_path, *argv, fmt="full")
    compact, _ = simulate(U08, tmp_path, *argv, fmt="compact")
    assert all(run["format"] == "compact" for run in compact["runs"])
    assert validate_run_file(U08, compact) is None
    assert expand_document(compact) == full


REQUEST = request_rows(40)


@settings(max_examples=80, deadline=None)
@given(
    requests=st.lists(REQUEST, min_size=1, max_size=10),
    policy=st.sampled_from(["paged", "budgeted", "fair", "static", "continuous"]),
    budget=st.integers(4, 64),
    pool=st.integers(0, 3),
    cap=st.sampled_from([None, 2, 4]),
)
def test_unit08_random_round_trip(requests, policy, budget, pool, cap):
    rows = [{"id": f"R{i}", **r} for i, r in enumerate(requests)]
    full, timeline = unit08_run(rows, policy, budget, pool, cap)
    if full is not None:
        assert expand_run(compact_run(full, timeline)) == full


def test_preempted_requests_keep_every_slice():
    """Seeded traces under ``paged`` with tight pools: some runs preempt; all round-trip."""
    rng, preempting = random.Random(1), 0
    for _ in range(60):
        rows = [
            {"id": f"R{i}", "arrivalMs": rng.randint(0, 40) / 4}
            | {"inputTokens": rng.randint(1, 60), "outputTokens": rng.randint(1, 30)}
            for i in range(rng.randint(2, 10))
        ]
        full, timeline = unit08_run(rows, "paged", rng.randint(4, 64), rng.randint(0, 3), None)
        if full is None:
            continue
        compact = compact_run(full, timeline)
        preempting += bool(compact["preempts"])
        assert expand_run(compact) == full
    assert preempting >= 5


def test_a_batch_without_every_running_request_is_written_full(tmp_path, capsys):
    class OneAtATime:  # fcfs, but decodes only the first running request
        @staticmethod
        def fcfs(view):
            if view.waiting:
                return servesim.Batch.prefill_of(view.waiting[0], view.waiting[0].remaining_prefill)
            return servesim.Batch.decode_of(view.running[:1])

    doc, _ = simulate(
        U07, tmp_path, "--trace", "mixed", "--policy", "fcfs", fmt="compact", policies=OneAtATime
    )
    assert "format" not in doc["runs"][0] and doc["runs"][0]["events"]
    assert "written in full" in capsys.readouterr().out


def test_replay_reads_compact_runs(tmp_path):
    compact, _ = simulate(U07, tmp_path, "--trace", "unseen", "--policy", "chunked", fmt="compact")
    run = compact["runs"][0]
    assert verify.verify_run(run, compact["trace"], run["device"]) == []
    run["stepEndMs"][3] += 1.0  # a step that ends later than the device allows
    assert verify.verify_run(run, compact["trace"], run["device"]) != []


def test_large_runs_default_to_compact():
    trace = servesim.read_trace_file(AZURE)
    tokens = sum(r.output_tokens for r in trace.requests)
    assert tokens > COMPACT_ABOVE_TOKENS
    assert default_format(trace, 1) == "compact"
    assert default_format(reference.load_trace(U07, "mixed"), 2) == "full"


def ta_command(tmp_path, engine, *extra):
    profile = tmp_path / "profile.json"
    profile.write_text(
        json.dumps(
            {
                "prefillMsPerToken": 0.1,
                "decodeBatchMs": 20.0,
                "decodeMsPerSeq": 0.05,
                "overheadMs": 0.25,
                "maxActive": 128,
            }
        )
    )
    out = tmp_path / f"{engine}.json"
    argv = [
        "simulate",
        "--unit",
        "unit08",
        "--reference",
        "--engine",
        engine,
        "--trace",
        str(AZURE),
    ]
    argv += ["--device-profile", str(profile), "--output", str(out), *extra]
    return infralab.main(argv), out


@pytest.mark.parametrize("fmt", ["full", "compact"])
def test_ta_command_same_file_from_either_engine(tmp_path, fmt):
    flags = ("--policy", "budgeted", "--budget", "512", "--format", fmt)
    (lab_code, lab), (fast_code, fast) = (ta_command(tmp_path, e, *flags) for e in ("lab", "auto"))
    assert lab_code == fast_code == 0
    assert lab.read_bytes() == fast.read_bytes()


def test_engine_fast_refuses_what_it_does_not_cover(tmp_path, capsys):
    code, out = ta_command(tmp_path, "fast", "--policy", "fair", "--budget", "512")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "does not cover policy fair" in err[0]
    assert not out.exists()
