"""Unit 09 (p99, prefill_amplification, waiting_share, mean_queue), written from the
handout: the submission that another student copies (the test renames its variables and
reorders its functions)."""

import math

from measure import Ratio, first_steps, queue_intervals


def p99(values):
    if not values:
        return None
    sorted_values = sorted(values)
    position = math.ceil(0.99 * len(sorted_values))
    return sorted_values[position - 1]


def prefill_amplification(run):
    input_tokens = {request["id"]: request["inputTokens"] for request in run["requests"]}
    executed_tokens = 0
    new_prompt_tokens = 0
    already_started = set()
    for event in run["events"]:
        for chunk in event["prefill"]:
            executed_tokens += chunk["tokens"]
            if chunk["id"] in already_started:
                continue
            already_started.add(chunk["id"])
            new_prompt_tokens += input_tokens[chunk["id"]] - chunk.get("cached", 0)
    return Ratio(executed_tokens, new_prompt_tokens, "executed / new prompt tokens")


def waiting_share(run):
    first_start = first_steps(run)
    total_wait = 0.0
    total_residence = 0.0
    for request in run["requests"]:
        started = first_start.get(request["id"])
        if started is None:
            continue
        total_wait += started - request["arrivalMs"]
        total_residence += request["statusMs"] - request["arrivalMs"]
    return Ratio(total_wait, total_residence, "waiting ms / residence ms")


def mean_queue(run, start_ms, end_ms):
    window = end_ms - start_ms
    if window <= 0:
        return 0.0
    waited = 0.0
    for arrived, left in queue_intervals(run):
        overlap = min(left, end_ms) - max(arrived, start_ms)
        if overlap > 0:
            waited += overlap
    return waited / window
