"""Never returns from either policy: every case must stop at the CPU or wall limit.

EARNS: none
"""

from servesim import Batch, SchedulerView


def fcfs(view: SchedulerView) -> Batch:
    while True:
        pass


def chunked(view: SchedulerView, chunk: int) -> Batch:
    n = 0
    while True:
        n += 1
