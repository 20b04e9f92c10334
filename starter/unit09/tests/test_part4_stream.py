"""Part 4: backpressure() in policies.py: slow clients fill their output buffers (31.10).

slow-readers: sixteen streamed requests on devices/streaming.json (a 1 KiB buffer of 64-byte
events, resume at 512 bytes, cancelled after 2 s paused); nine clients read slower than the
device writes. The checks: the reference timeline; a paused stream is never given tokens (the
engine stops the run if it is); a stream that drains runs again; a paused stream's pages stay
its own (it is never a victim); and a step that would only preempt waits instead.
"""

from adapters import check_timeline, device, run_policy

SLOW, FAST = 400, 1_000_000  # bytes/s: under the ~3,200 the device writes, and at once


def paused_victims(run: dict) -> list[str]:
    """Preemptions of a stream during one of its pauses (``pausedMs`` of the run file)."""
    pauses = {r["id"]: r.get("pausedMs") or [] for r in run["requests"]}
    return [
        f"{rid} in step {event['index']} at {event['startMs']} ms"
        for event in run["events"]
        for rid in event["preempt"]
        if any(start <= event["startMs"] < end for start, end in pauses[rid])
    ]


def test_part4_backpressure_slow_readers_timeline():
    run = run_policy("slow-readers", "backpressure", device("streaming"))
    check_timeline("slow-readers-streaming", "backpressure", run)


def test_part4_a_paused_stream_resumes_and_completes():
    """One slow reader alone: its buffer fills within a second, it pauses, drains to the low
    mark and must be decoded again until its last token (no other request keeps the device
    busy, so a stream left out for good leaves a step with nothing to run)."""
    trace = [{"id": "A", "arrivalMs": 0, "inputTokens": 40, "outputTokens": 60,
              "readBytesPerS": SLOW}]  # fmt: skip
    run = run_policy(trace, "backpressure", device("streaming"))
    (a,) = run["requests"]
    assert a["pausedMs"], "A's buffer should fill: 64-byte events every ~20 ms, read at 400 B/s"
    assert a["status"] == "completed", "A must be decoded again once its buffer drains"
    assert len(a["tokenTimesMs"]) == 60


def test_part4_paused_streams_keep_their_pages():
    """Slow readers pause while holding pages of a full pool: they are never preempted (a
    victim is chosen among the streams that may run), whatever the others need."""
    run = run_policy("slow-readers", "backpressure", device("streaming", kvPages=24))
    assert paused_victims(run) == [], "a paused stream was preempted"


def test_part4_waits_when_paused_streams_hold_the_pages():
    """A and B read slowly and fill 16 of a 20-page pool; C (fast) needs more pages than are
    left. While A and B are paused, nothing may run but C's growth: the policy must not preempt
    C only to find nothing else to run (it waits for the first paused stream to drain)."""
    dev = device("streaming", kvPages=20)
    trace = [
        {"id": "A", "arrivalMs": 0, "inputTokens": 120, "outputTokens": 80, "readBytesPerS": SLOW},
        {"id": "B", "arrivalMs": 0, "inputTokens": 120, "outputTokens": 80, "readBytesPerS": SLOW},
        {"id": "C", "arrivalMs": 5, "inputTokens": 40, "outputTokens": 120, "readBytesPerS": FAST},
    ]
    run = run_policy(trace, "backpressure", dev)
    assert paused_victims(run) == [], "a paused stream was preempted"
    statuses = {r["id"]: r["status"] for r in run["requests"]}
    assert statuses == {"A": "completed", "B": "completed", "C": "completed"}
