"""Part 1: cancel_aware() in policies.py (chapter 31, exercise 31.11).

cancels: fourteen requests, ten of them cancelled by their client while they wait, prefill or
decode. The checks: the reference timeline; no request scheduled after it was cancelled; the
pool never overfilled (a page counted free twice is handed out twice).
"""

from adapters import check_timeline, device, pages_in_use, run_policy


def cancelled_late(run: dict) -> list[str]:
    """Requests scheduled in a step that starts at or after the moment they were cancelled."""
    end = {r["id"]: r["statusMs"] for r in run["requests"] if r["status"] == "cancelled"}
    found = []
    for event in run["events"]:
        ids = [*event["decode"], *(c["id"] for c in event["prefill"]), *event["preempt"]]
        found += [f"{rid} in step {event['index']}" for rid in ids
                  if rid in end and event["startMs"] >= end[rid]]  # fmt: skip
    return found


def test_part1_cancel_aware_cancels_timeline():
    check_timeline("cancels", "cancel_aware", run_policy("cancels", "cancel_aware"))


def test_part1_no_cancelled_request_is_scheduled_again():
    run = run_policy("cancels", "cancel_aware")
    assert cancelled_late(run) == [], "a cancelled request was scheduled after it left"
    statuses = {r["id"]: r["status"] for r in run["requests"]}
    assert list(statuses.values()).count("cancelled") == 10


def test_part1_a_request_cancelled_while_waiting_never_starts():
    """A fills the pool's slots (K = 1): B waits and is cancelled at 5 ms; C, behind it, must
    start as soon as A is done, and B must never appear in a step."""
    trace = [
        {"id": "A", "arrivalMs": 0, "inputTokens": 40, "outputTokens": 4},
        {"id": "B", "arrivalMs": 1, "inputTokens": 40, "outputTokens": 4, "cancelMs": 4},
        {"id": "C", "arrivalMs": 2, "inputTokens": 40, "outputTokens": 4},
    ]
    run = run_policy(trace, "cancel_aware", device(maxActive=1))
    scheduled = {c["id"] for e in run["events"] for c in e["prefill"]}
    assert "B" not in scheduled, "B was cancelled before it could start"
    req = {r["id"]: r for r in run["requests"]}
    assert req["C"]["firstTokenMs"] > req["A"]["finishMs"], "C starts after A, K = 1"


def test_part1_pages_freed_by_a_cancel_are_counted_once():
    """On a 12-page pool: A and B decode; B's client cancels; C and D arrive and need most of
    the pool. If the policy adds B's pages back itself (the engine already did), it hands out
    more pages than exist and the engine stops the run."""
    trace = [
        {"id": "A", "arrivalMs": 0, "inputTokens": 60, "outputTokens": 30},
        {"id": "B", "arrivalMs": 0, "inputTokens": 60, "outputTokens": 30, "cancelMs": 30},
        {"id": "C", "arrivalMs": 40, "inputTokens": 60, "outputTokens": 4},
        {"id": "D", "arrivalMs": 40, "inputTokens": 60, "outputTokens": 4},
    ]
    dev = device(kvPages=12)
    run = run_policy(trace, "cancel_aware", dev)
    assert max(pages_in_use(run)) <= 12
    assert cancelled_late(run) == []
    assert {r["id"]: r["status"] for r in run["requests"]}["B"] == "cancelled"


def test_part1_cancel_aware_on_shared_prefixes_claims_nothing():
    run = run_policy("shared-prefix", "cancel_aware")
    check_timeline("shared-prefix", "cancel_aware", run)
    assert not any(c.get("cached") for e in run["events"] for c in e["prefill"])


def test_part1_a_victim_cancelled_while_requeued_never_restarts():
    """Exercise 31.11's late re-queue: on a 10-page pool A and B (60-token prompts) decode
    until both need a sixth page (80 positions each, 12 pages); B, admitted last, is preempted
    at 419.25 ms and waits at the front of the queue for pages; its client cancels at 700 ms.
    B must end cancelled with its 21 tokens, never prefilled again; A runs on alone."""
    trace = [
        {"id": "A", "arrivalMs": 0, "inputTokens": 60, "outputTokens": 60},
        {"id": "B", "arrivalMs": 0, "inputTokens": 60, "outputTokens": 60, "cancelMs": 700},
    ]
    run = run_policy(trace, "cancel_aware", device(kvPages=10))
    victims = [(e["index"], rid) for e in run["events"] for rid in e["preempt"]]
    assert [rid for _, rid in victims] == ["B"], "B, admitted last, is the one victim"
    restarts = [e["index"] for e in run["events"] for c in e["prefill"] if c["id"] == "B"]
    assert restarts == [0], "B is never prefilled again after its preemption"
    req = {r["id"]: r for r in run["requests"]}
    assert (req["B"]["status"], len(req["B"]["tokenTimesMs"])) == ("cancelled", 21)
    assert req["A"]["status"] == "completed" and cancelled_late(run) == []
