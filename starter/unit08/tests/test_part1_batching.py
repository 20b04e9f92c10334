"""Part 1: static() and continuous() in policies.py (chapter 31.2, figure 31.1, exercise 31.2).

The trace static-vs-continuous holds A, B and C at 0 ms with 5, 2 and 2 output tokens. On the
chapter's devices the prefill is free and its first token counts as done, so A, B and C need
4, 1 and 1 decode rounds; K = 2.
"""

from adapters import cache_after_steps, check_timeline, device, run_policy


def mean_completion(run: dict) -> float:
    return sum(r["e2eMs"] for r in run["requests"]) / len(run["requests"])


def finish_times(run: dict) -> dict:
    return {r["id"]: r["statusMs"] for r in run["requests"]}


def test_part1_static_figure_31_1():
    run = run_policy("static-vs-continuous", "static", "round-10ms")
    check_timeline("figure-31-1", "static", run)
    assert finish_times(run) == {"A": 40, "B": 10, "C": 50}, "static: B 10, A 40, C 50 ms"
    assert mean_completion(run) == 100 / 3


def test_part1_continuous_figure_31_1():
    run = run_policy("static-vs-continuous", "continuous", "round-10ms")
    check_timeline("figure-31-1", "continuous", run)
    assert finish_times(run) == {"A": 40, "B": 10, "C": 20}, "continuous: C joins at 10 ms"
    assert mean_completion(run) == 70 / 3


def test_part1_static_exercise_31_2():
    run = run_policy("static-vs-continuous", "static", "round-6-10ms")
    check_timeline("exercise-31-2", "static", run)
    assert mean_completion(run) == 24, "(10 + 28 + 34) / 3"


def test_part1_continuous_exercise_31_2():
    run = run_policy("static-vs-continuous", "continuous", "round-6-10ms")
    check_timeline("exercise-31-2", "continuous", run)
    assert mean_completion(run) == 62 / 3, "(10 + 20 + 32) / 3"


def start_order(run: dict) -> list[str]:
    """Requests in the order of their first prefill chunk."""
    return [c["id"] for e in run["events"] for c in e["prefill"] if c["fromToken"] == 0]


def test_part1_static_burst_with_4_slots():
    run = run_policy("burst", "static", "slots-4")
    check_timeline("burst-slots-4", "static", run)


def test_part1_continuous_starts_in_arrival_order_with_4_slots():
    # 86 requests with prompts of 26 to 1,585 tokens and only K = 4 slots: the queue is long, so
    # a policy that picks short prompts first, or fills fewer slots than are free, shows here
    run = run_policy("burst", "continuous", "slots-4")
    arrival = {r["id"]: r["arrivalMs"] for r in run["requests"]}
    started = start_order(run)
    assert started == sorted(started, key=arrival.__getitem__), (
        "continuous: requests must start in arrival order, whatever their prompt length"
    )
    check_timeline("burst-slots-4", "continuous", run)


def test_part1_slots_are_never_exceeded():
    for policy in ("static", "continuous"):
        run = run_policy("burst", policy)
        for event in run["events"]:
            assert not (event["decode"] and event["prefill"]), (
                f"{policy}, step {event['index']}: whole-prompt batching never mixes"
            )
        for index, cache in enumerate(cache_after_steps(run)):
            assert len(cache) <= device().max_active, f"{policy}, step {index}: K exceeded"
        for req in run["requests"]:  # burst has 3 s deadlines: late ones are cancelled
            assert req["status"] in ("completed", "cancelled"), f"{policy}: {req['id']} rejected"


# Length buckets and the wait window (31.2) on the chapter's device (K = 2, prefill free): A and
# B arrive together with prompts in different 256-token buckets, C (A's bucket) a little later.
BUCKET_TRACE = [
    {"id": "A", "arrivalMs": 0, "inputTokens": 100, "outputTokens": 2},
    {"id": "B", "arrivalMs": 0, "inputTokens": 900, "outputTokens": 2},
    {"id": "C", "arrivalMs": 5, "inputTokens": 120, "outputTokens": 2},
]


def groups(run: dict) -> list[tuple[float, set[str]]]:
    """Each group static launched: (start ms, the requests its prefill step holds)."""
    return [(e["startMs"], {c["id"] for c in e["prefill"]}) for e in run["events"] if e["prefill"]]


def test_part1_static_defaults_launch_at_once_without_buckets():
    run = run_policy(BUCKET_TRACE, "static", "round-10ms")
    assert groups(run)[0] == (0, {"A", "B"}), "one bucket, no wait: the first K launch at 0 ms"


def test_part1_static_full_bucket_launches_before_the_window():
    run = run_policy(BUCKET_TRACE, "static", "round-10ms", bucket=256, wait_ms=50)
    first = groups(run)[0]
    assert first == (5, {"A", "C"}), "C fills A's bucket (K = 2) at 5 ms: it launches then"
    assert groups(run)[1][1] == {"B"}, "B's bucket goes next, alone"


def test_part1_static_bucket_launches_when_its_oldest_has_waited_the_window():
    trace = BUCKET_TRACE[:2]  # no C: neither bucket fills
    run = run_policy(trace, "static", "round-10ms", bucket=256, wait_ms=20)
    assert groups(run)[0] == (20, {"A"}), "both wait 20 ms; A's bucket stands first in the queue"
    assert groups(run)[1][1] == {"B"}


def test_part1_static_buckets_never_mix_lengths():
    run = run_policy("burst", "static", "slots-4", bucket=256, wait_ms=100)
    size = {r["id"]: r["inputTokens"] for r in run["requests"]}
    for start, ids in groups(run):
        assert len({(size[i] - 1) // 256 for i in ids}) == 1, f"group at {start} ms mixes buckets"
