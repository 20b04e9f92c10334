"""Allocates memory without bound inside the policy: the address-space limit must stop it.

EARNS: none
"""

from servesim import Batch, SchedulerView

_hoard = []


def _bomb():
    while True:
        _hoard.append(bytearray(64 << 20))  # 64 MB at a time, touched so it is real


def fcfs(view: SchedulerView) -> Batch:
    _bomb()


def chunked(view: SchedulerView, chunk: int) -> Batch:
    _bomb()
