"""The figures the unit 07 lesson prints must come out of the engine exactly."""

import pytest
from labtools import run_ref


def _req(run, rid):
    return next(r for r in run["requests"] if r["id"] == rid)


@pytest.mark.parametrize(
    ("policy", "params", "a_max_itl", "l_ttft", "s_ttft", "all_done"),
    [
        ("fcfs", {}, 14.75, 12.50, 11.75, 29.50),
        ("chunked", {"chunk": 2}, 3.50, 21.25, 21.75, 30.75),
    ],
)
def test_mixed_table(policy, params, a_max_itl, l_ttft, s_ttft, all_done):
    run = run_ref("mixed", policy, **params)
    assert _req(run, "A")["maxItlMs"] == a_max_itl
    assert _req(run, "L")["ttftMs"] == l_ttft
    assert _req(run, "S")["ttftMs"] == s_ttft
    assert run["summary"]["allDoneMs"] == all_done
    assert _req(run, "A")["ttftMs"] == 2.25


def test_mixed_fcfs_step_by_step():
    """The lesson's hand timeline: A prefill to 2.25, L to 14.50, S to 15.75, first decode 17."""
    events = run_ref("mixed", "fcfs")["events"]
    spans = [
        (e["startMs"], e["endMs"], e["decode"], [c["id"] for c in e["prefill"]]) for e in events
    ]
    assert spans[:4] == [
        (0.0, 2.25, [], ["A"]),
        (2.25, 14.5, [], ["L"]),
        (14.5, 15.75, [], ["S"]),
        (15.75, 17.0, ["A", "L", "S"], []),
    ]


@pytest.mark.parametrize(
    ("overhead", "fcfs_done", "chunked_done"), [(None, 12.25, 13.50), (0.0, 12.0, 12.0)]
)
def test_prefill_only_counterexample(overhead, fcfs_done, chunked_done):
    fcfs = run_ref("prefill-only", "fcfs", overhead_ms=overhead)
    chunked = run_ref("prefill-only", "chunked", overhead_ms=overhead, chunk=2)
    assert fcfs["summary"]["allDoneMs"] == fcfs_done
    assert chunked["summary"]["allDoneMs"] == chunked_done
    assert chunked["summary"]["prefillSubmissions"] == 6
    assert fcfs["summary"]["prefillSubmissions"] == 1
