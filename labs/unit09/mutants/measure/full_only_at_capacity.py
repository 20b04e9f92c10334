"""Mutant: a buffer counts as full only when its peak reached the capacity, not when the peak
left no room for one more event (the engine pauses a stream then)."""

_slow_clients = slow_clients  # noqa: F821


def slow_clients(run):
    got = _slow_clients(run)
    if got is None:
        return None
    streamed = [r for r in run["requests"] if r["tokenTimesMs"]]
    full = sum(1 for r in streamed if (r.get("bufferPeakBytes") or 0) >= got.capacity_bytes)
    ratio = Ratio(full, got.buffer_full.den, got.buffer_full.what)  # noqa: F821
    return SlowClients(**{**got.__dict__, "buffer_full": ratio})  # noqa: F821
