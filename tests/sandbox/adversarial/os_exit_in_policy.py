"""Calls os._exit(0) from inside the policy: the child ends "successfully" mid-simulation.

EARNS: none
"""

import os

from servesim import Batch, SchedulerView


def fcfs(view: SchedulerView) -> Batch:
    os._exit(0)


def chunked(view: SchedulerView, chunk: int) -> Batch:
    os._exit(0)
