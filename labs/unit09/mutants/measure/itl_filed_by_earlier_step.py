"""Mutant: an ITL gap is filed by the step that emitted the earlier token, not the step that
ended the gap."""


def itl_split(run):
    with_prefill, without, paused = [], [], []
    carries = {event["endMs"]: bool(event["prefill"]) for event in run["events"]}
    for request in run["requests"]:
        times, pauses = request["tokenTimesMs"], request.get("pausedMs") or []
        for before, after in zip(times, times[1:]):
            if any(start < after and (end is None or end > before) for start, end in pauses):
                paused.append(after - before)
            elif carries.get(before, False):
                with_prefill.append(after - before)
            else:
                without.append(after - before)
    return ItlSplit(with_prefill, without, paused)  # noqa: F821
