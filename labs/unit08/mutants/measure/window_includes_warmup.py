"""Mutant: replication measures from the first arrival, so the warm-up's requests are in the
window (the cool-down is still left out)."""

_replication = replication  # noqa: F821


def replication(requests, slo, warmup_requests, cooldown_requests, tolerance, passes=None):
    return _replication(requests, slo, 0, cooldown_requests, tolerance, passes)
