"""Prints megabytes to stdout and stderr, but schedules correctly: full marks, output cut.

EARNS: all
"""

import sys

from servesim import Batch, SchedulerView

_LINE = "x" * 1023 + "\n"
sys.stdout.write(_LINE * 4096)  # 4 MB
sys.stderr.write(_LINE * 1024)  # 1 MB


def fcfs(view: SchedulerView) -> Batch:
    print(_LINE * 16, end="")
    if view.waiting:
        first = view.waiting[0]
        return Batch.prefill_of(first, first.remaining_prefill)
    return Batch.decode_of(view.running)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    print(_LINE * 16, end="")
    last_was_decode = view.previous is not None and bool(view.previous.decode)
    if view.running and not (last_was_decode and view.waiting):
        return Batch.decode_of(view.running)
    first = view.waiting[0]
    return Batch.prefill_of(first, min(chunk, first.remaining_prefill))
