"""How long one submission takes: CUDA events on a GPU, a monotonic clock on CPU.

Both readings are kept: ``device_ms`` is what the runner's clock advances by (the CUDA event
interval, or the monotonic interval on CPU), ``wall_ms`` is the host's view of the same call.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Timing:
    device_ms: float
    wall_ms: float


class Stopwatch:
    def __init__(self, device: torch.device | str):
        self.cuda = torch.device(device).type == "cuda"

    @property
    def method(self) -> str:
        return "cuda-events" if self.cuda else "monotonic-clock"

    def time(self, fn: Callable[[], object]) -> tuple[object, Timing]:
        """Run ``fn`` (which must wait for its own device work) and time it."""
        if not self.cuda:
            start = time.perf_counter_ns()
            result = fn()
            wall = (time.perf_counter_ns() - start) / 1e6
            return result, Timing(wall, wall)
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start = time.perf_counter_ns()
        begin.record()
        result = fn()
        end.record()
        end.synchronize()
        wall = (time.perf_counter_ns() - start) / 1e6
        return result, Timing(begin.elapsed_time(end), wall)
