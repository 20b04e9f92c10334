"""Mutant: the mean queue counts every wait that overlaps the window whole, not clipped to the
window's edges."""


def mean_queue(run, start_ms, end_ms):
    if end_ms <= start_ms:
        return 0.0
    inside = sum(
        end - begin
        for begin, end in queue_intervals(run)  # noqa: F821
        if begin < end_ms and end > start_ms
    )
    return inside / (end_ms - start_ms)
