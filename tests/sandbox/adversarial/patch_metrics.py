"""Monkeypatches the metric functions so every request reports TTFT 0 and tiny ITLs, and the
summary looks perfect; the schedule is a wrong one (last arrival first).

EARNS: none
"""

import servesim.metrics
import servesim.runfile
from servesim import Batch, SchedulerView


def _perfect(arrival_ms, token_times_ms):
    n = len(token_times_ms)
    return {
        "firstTokenMs": arrival_ms,
        "finishMs": arrival_ms,
        "ttftMs": 0.0,
        "itlMs": [0.0] * (n - 1),
        "maxItlMs": 0.0 if n > 1 else None,
        "tpotMs": 0.0 if n > 1 else None,
        "e2eMs": 0.0,
    }


servesim.metrics.request_metrics = _perfect
servesim.runfile.request_metrics = _perfect


def fcfs(view: SchedulerView) -> Batch:
    if view.waiting:
        last = view.waiting[-1]
        return Batch.prefill_of(last, last.remaining_prefill)
    return Batch.decode_of(view.running)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    if view.waiting:
        last = view.waiting[-1]
        return Batch.prefill_of(last, min(chunk, last.remaining_prefill))
    return Batch.decode_of(view.running)
