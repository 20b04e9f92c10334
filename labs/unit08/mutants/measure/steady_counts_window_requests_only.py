"""Mutant: steady_state counts only the requests that arrived in the window in N(t), so the
warm-up's requests still in the system at the window's start are missing from the backlog."""

_steady_state = steady_state  # noqa: F821


def steady_state(requests, start_ms, end_ms, tolerance):
    inside = [r for r in requests if start_ms <= r["arrivalMs"] < end_ms]
    return _steady_state(inside, start_ms, end_ms, tolerance)
