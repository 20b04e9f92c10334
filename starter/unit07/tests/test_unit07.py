"""Public tests for unit 07. They start red: implement fcfs() and chunked() in policies.py.

Part 1 is fcfs, part 2 is chunked. Run ``pytest -q`` from the lab folder; add ``-s`` to see
the one-line summary each passing test prints.
"""

from pathlib import Path

import pytest
from adapters import by_id, expected_token_times, first_divergence, run_policy
from servesim.runview.hint import show_command

LAB_FOLDER = Path(__file__).resolve().parent.parent


def summary_line(label: str, run: dict) -> None:
    s = run["summary"]
    print(f"\n  {label}: {s['submissions']} submissions, all done at {s['allDoneMs']:.2f} ms")


def check_timeline(trace: str, policy: str, run: dict) -> None:
    divergence = first_divergence(expected_token_times(trace, policy), run)
    if divergence is not None:
        see = show_command(run, trace, policy, LAB_FOLDER)
        pytest.fail(f"{policy} on {trace}: first differing token time: {divergence}\n{see}")


# --- part 1: fcfs (complete prefill first) ---------------------------------------------------


def test_part1_fcfs_mixed_timeline():
    run = run_policy("mixed", "fcfs")
    check_timeline("mixed", "fcfs", run)
    summary_line("fcfs mixed", run)


def test_part1_fcfs_mixed_lesson_figures():
    run = run_policy("mixed", "fcfs")
    req = by_id(run)
    assert req["A"]["ttftMs"] == pytest.approx(2.25), (
        "A's first token comes after its 2-token prefill"
    )
    assert req["A"]["maxItlMs"] == pytest.approx(14.75), "A stalls behind L's and S's prefill"
    assert req["L"]["ttftMs"] == pytest.approx(12.50)
    assert req["S"]["ttftMs"] == pytest.approx(11.75)
    assert run["summary"]["allDoneMs"] == pytest.approx(29.50)


def test_part1_fcfs_prefill_only():
    assert run_policy("prefill-only", "fcfs")["summary"]["allDoneMs"] == pytest.approx(12.25)
    assert run_policy("prefill-only", "fcfs", overhead_ms=0)["summary"]["allDoneMs"] == 12


# --- part 2: chunked prefill -----------------------------------------------------------------


def test_part2_chunked_mixed_timeline():
    run = run_policy("mixed", "chunked", chunk=2)
    check_timeline("mixed", "chunked", run)
    summary_line("chunked mixed", run)


def test_part2_chunked_mixed_lesson_figures():
    run = run_policy("mixed", "chunked", chunk=2)
    req = by_id(run)
    assert req["A"]["ttftMs"] == pytest.approx(2.25), "chunking cannot change a TTFT already past"
    assert req["A"]["maxItlMs"] == pytest.approx(3.50), "one decode (1.25) + one chunk (2.25)"
    assert req["L"]["ttftMs"] == pytest.approx(21.25)
    assert req["S"]["ttftMs"] == pytest.approx(21.75)
    assert run["summary"]["allDoneMs"] == pytest.approx(30.75)


def test_part2_chunked_prefill_only_counterexample():
    run = run_policy("prefill-only", "chunked", chunk=2)
    assert run["summary"]["allDoneMs"] == pytest.approx(13.50)
    assert run["summary"]["prefillSubmissions"] == 6, "12 prompt tokens in chunks of 2"
    no_overhead = run_policy("prefill-only", "chunked", overhead_ms=0, chunk=2)
    assert no_overhead["summary"]["allDoneMs"] == 12


# --- rules on a trace without published answers -----------------------------------------------


def _arrived_waiting(run: dict, at_ms: float) -> list[str]:
    """Requests that had arrived by ``at_ms`` and whose prefill was unfinished then."""
    done_prefill = {}
    for event in run["events"]:
        for chunk in event["prefill"]:
            done_prefill[chunk["id"]] = event["endMs"]
    return [
        r["id"]
        for r in run["requests"]
        if r["arrivalMs"] <= at_ms and done_prefill.get(r["id"], float("inf")) > at_ms
    ]


def test_part1_fcfs_rules_on_unseen():
    run = run_policy("unseen", "fcfs")
    for event in run["events"]:
        waiting = _arrived_waiting(run, event["startMs"])
        if waiting:
            assert not event["decode"], f"event {event['index']}: decode while {waiting} wait"
            assert [c["id"] for c in event["prefill"]] == [waiting[0]], (
                f"event {event['index']}: fcfs prefills the earliest arrival {waiting[0]}"
            )
            assert event["prefill"][0]["fromToken"] == 0, "fcfs prefills a prompt in one go"


def test_part2_chunked_rules_on_unseen():
    run = run_policy("unseen", "chunked", chunk=4)
    previous = None
    for event in run["events"]:
        assert not (event["decode"] and event["prefill"]), "unit 07 keeps decode and prefill apart"
        for chunk in event["prefill"]:
            assert chunk["tokens"] <= 4, f"event {event['index']}: chunk of {chunk['tokens']} > 4"
            if previous is not None and not previous["decode"]:
                running = [
                    r["id"]
                    for r in run["requests"]
                    if r["tokenTimesMs"][0] <= event["startMs"] < r["tokenTimesMs"][-1]
                ]
                assert not running, (
                    f"event {event['index']}: {running} are running, decode them before this chunk"
                )
        previous = event


@pytest.mark.parametrize("trace", ["mixed", "prefill-only", "unseen"])
@pytest.mark.parametrize("policy", ["fcfs", "chunked"])
def test_every_request_gets_all_its_tokens(trace, policy):
    run = run_policy(trace, policy)
    for req in run["requests"]:
        times = req["tokenTimesMs"]
        assert len(times) == req["outputTokens"], f"{req['id']}: {len(times)} tokens"
        assert times[0] > req["arrivalMs"], f"{req['id']}: a token before its arrival"
        assert all(a < b for a, b in zip(times, times[1:])), f"{req['id']}: times not increasing"
