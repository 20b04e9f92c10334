"""Public tests for unit 07. They start red: implement fcfs() and chunked() in policies.py.

Part 1 is fcfs, part 2 is chunked. Run ``pytest -q`` from the lab folder; add ``-s`` to see
the one-line summary each passing test prints.
"""

import math
from pathlib import Path

import pytest
from adapters import LAB, by_id, expected_token_times, first_divergence, run_policy
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


def longest_gap(times: list[float]) -> tuple[float, float]:
    """The two consecutive token times with the longest interval between them."""
    return max(zip(times, times[1:]), key=lambda pair: pair[1] - pair[0])


# --- part 1: fcfs (complete prefill first) ---------------------------------------------------


def test_part1_fcfs_mixed_timeline():
    run = run_policy("mixed", "fcfs")
    check_timeline("mixed", "fcfs", run)
    summary_line("fcfs mixed", run)


def test_part1_fcfs_mixed_a_waits_for_both_prompts():
    run = run_policy("mixed", "fcfs")
    req = by_id(run)
    first = run["events"][0]
    assert [(c["id"], c["fromToken"]) for c in first["prefill"]] == [("A", 0)], (
        "A arrives first and alone: its whole prompt is the first submission"
    )
    assert req["A"]["tokenTimesMs"][0] == pytest.approx(first["endMs"]), (
        "A's first token comes at the end of its prefill"
    )
    start, end = longest_gap(req["A"]["tokenTimesMs"])
    others = [e for e in run["events"] if {c["id"] for c in e["prefill"]} & {"L", "S"}]
    assert others and all(start <= e["startMs"] and e["endMs"] <= end for e in others), (
        "A's longest ITL spans the whole prefills of L and S"
    )


def test_part1_fcfs_prefill_only():
    run = run_policy("prefill-only", "fcfs")
    check_timeline("prefill-only", "fcfs", run)
    assert run["summary"]["submissions"] == 1, "fcfs prefills the whole prompt in one submission"
    no_overhead = run_policy("prefill-only", "fcfs", overhead_ms=0)
    saved = run["summary"]["allDoneMs"] - no_overhead["summary"]["allDoneMs"]
    assert saved == pytest.approx(LAB.device.overhead_ms), "one submission, one overhead"


# --- part 2: chunked prefill -----------------------------------------------------------------


def test_part2_chunked_mixed_timeline():
    run = run_policy("mixed", "chunked", chunk=2)
    check_timeline("mixed", "chunked", run)
    summary_line("chunked mixed", run)


def test_part2_chunked_mixed_trades_first_tokens_for_a_shorter_itl():
    """Compared with the reference's fcfs on the same trace (tests/expected/mixed.json)."""
    run = run_policy("mixed", "chunked", chunk=2)
    req = by_id(run)
    fcfs = expected_token_times("mixed", "fcfs")
    assert req["A"]["tokenTimesMs"][0] == pytest.approx(fcfs["A"][0]), (
        "chunking cannot change a TTFT already past: A's prompt fits one chunk"
    )
    a_times = req["A"]["tokenTimesMs"]
    assert req["A"]["maxItlMs"] < max(b - a for a, b in zip(fcfs["A"], fcfs["A"][1:])), (
        "A's longest ITL is shorter than under fcfs"
    )
    for earlier, later in zip(a_times, a_times[1:]):
        chunks = [e for e in run["events"] if e["prefill"] and earlier <= e["startMs"] < later]
        assert len(chunks) <= 1, f"A waits {later - earlier:.2f} ms: one decode + one chunk at most"
    for rid in ("L", "S"):
        assert req[rid]["tokenTimesMs"][0] > fcfs[rid][0], f"{rid}'s first token comes later"


def test_part2_chunked_prefill_only_counterexample():
    run = run_policy("prefill-only", "chunked", chunk=2)
    check_timeline("prefill-only", "chunked", run)
    (prompt,) = [req["inputTokens"] for req in run["requests"]]
    fcfs_done = expected_token_times("prefill-only", "fcfs")["P"][-1]
    assert run["summary"]["allDoneMs"] > fcfs_done, "nothing to protect: chunks only add overhead"
    assert run["summary"]["prefillSubmissions"] == math.ceil(prompt / 2), (
        f"{prompt} prompt tokens in chunks of 2"
    )
    no_overhead = run_policy("prefill-only", "chunked", overhead_ms=0, chunk=2)
    fcfs_no_overhead = run_policy("prefill-only", "fcfs", overhead_ms=0)
    assert no_overhead["summary"]["allDoneMs"] == fcfs_no_overhead["summary"]["allDoneMs"], (
        "with overhead 0 both policies finish together"
    )


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
