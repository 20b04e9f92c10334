"""The decision point's rules are one ordered list, the components' (``servesim.components``),
that the engine and the grader's replay both fire: reorder it and both follow, so neither
restates it."""

from __future__ import annotations

from dataclasses import replace

from servesim import components
from streamcases import EXAMPLE, READ, entry, reasons, run_of, stream_trace

DEADLINE_MS = 1000.0


def tie_case():
    """A stream whose client cancels exactly when its pause deadline passes (both at one
    decision point, where the device idles with nothing else live)."""
    device = replace(EXAMPLE, stream_pause_deadline_ms=DEADLINE_MS)
    _, free = run_of(stream_trace((0.0, 400, READ)), device)
    paused_at = entry(free)["pausedMs"][0][0]
    return stream_trace((0.0, 400, READ, paused_at + DEADLINE_MS)), device


def test_rules_are_listed_once_in_their_order():
    assert [rule.name for rule in components.decision_rules(EXAMPLE)] == [
        "arrivals",
        "deadlines",
        "client cancels",
        "output buffers",
    ]
    plain = replace(EXAMPLE, stream_buffer_bytes=None, stream_event_bytes=0)
    assert [r.hook for r in components.decision_rules(plain)] == [
        "admit_due",
        "expire_deadlines",
        "cancel_clients",
    ]


def test_engine_and_replay_follow_one_reordered_list(monkeypatch):
    trace, device = tie_case()
    _, cancelled = run_of(trace, device)
    assert entry(cancelled)["cancelReason"] == "client"  # client cancels come first
    assert reasons(cancelled, trace, device) == {}

    order = components.COMPONENTS
    buffers = next(c for c in order if c.name == "output buffers")
    lifecycle = next(c for c in order if c.name == "cancels and deadlines")
    reordered = [c for c in order if c is not buffers]
    reordered.insert(reordered.index(lifecycle), buffers)
    monkeypatch.setattr(components, "COMPONENTS", reordered)
    _, stalled = run_of(trace, device)
    assert entry(stalled)["cancelReason"] == "stalled"  # now the output buffers come first
    assert reasons(stalled, trace, device) == {}
    assert "stalled stream not cancelled" in reasons(cancelled, trace, device)

    monkeypatch.undo()
    assert "cancel reason" in reasons(stalled, trace, device)
