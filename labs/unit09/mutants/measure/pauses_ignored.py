"""Mutant: ITL gaps that overlap a pause of their stream are filed with the schedule's gaps."""

_itl_split = itl_split  # noqa: F821


def itl_split(run):
    requests = [{**r, "pausedMs": []} for r in run["requests"]]
    return _itl_split({**run, "requests": requests})
