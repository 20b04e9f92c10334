"""Mutant: the slow-client shares divide by every request, rejected ones included, instead of
the requests that streamed."""

_slow_clients = slow_clients  # noqa: F821


def slow_clients(run):
    got = _slow_clients(run)
    if got is None:
        return None
    n = len(run["requests"])
    return SlowClients(  # noqa: F821
        paused=Ratio(got.paused.num, n, "requests paused / requests"),  # noqa: F821
        stalled=Ratio(got.stalled.num, n, "stalled / requests"),  # noqa: F821
        buffer_full=Ratio(got.buffer_full.num, n, "full buffers / requests"),  # noqa: F821
        peak_bytes=got.peak_bytes,
        capacity_bytes=got.capacity_bytes,
    )
