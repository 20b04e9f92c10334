"""Mutant: every cancelled request that streamed counts as stalled, whatever its reason."""

_slow_clients = slow_clients  # noqa: F821


def slow_clients(run):
    got = _slow_clients(run)
    if got is None:
        return None
    cancelled = sum(1 for r in run["requests"] if r["tokenTimesMs"] and r["status"] == "cancelled")
    stalled = Ratio(cancelled, got.stalled.den, got.stalled.what)  # noqa: F821
    return SlowClients(**{**got.__dict__, "stalled": stalled})  # noqa: F821
