"""How long one submission takes: CUDA events on a GPU; on CPU the process's CPU time.

Both readings are kept: ``device_ms`` is what the runner's clock advances by, ``wall_ms`` is the
host's view of the same call. On CPU with one torch thread (the runner's default) the device is
that one thread, so its work is the CPU time the process spent in the call: a machine shared
with other programs stretches the wall interval (the thread waits for a core) but not the work,
much as CUDA events time the GPU and not the host. With more threads the CPU time would add up
the threads, so the monotonic (wall) interval is used instead.
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
        self.cpu_time = not self.cuda and torch.get_num_threads() == 1

    @property
    def method(self) -> str:
        if self.cuda:
            return "cuda-events"
        return "process-cpu-time" if self.cpu_time else "monotonic-clock"

    def time(self, fn: Callable[[], object]) -> tuple[object, Timing]:
        """Run ``fn`` (which must wait for its own device work) and time it."""
        if not self.cuda:
            cpu, start = time.process_time_ns(), time.perf_counter_ns()
            result = fn()
            wall = (time.perf_counter_ns() - start) / 1e6
            device = (time.process_time_ns() - cpu) / 1e6 if self.cpu_time else wall
            return result, Timing(device, wall)
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start = time.perf_counter_ns()
        begin.record()
        result = fn()
        end.record()
        end.synchronize()
        wall = (time.perf_counter_ns() - start) / 1e6
        return result, Timing(begin.elapsed_time(end), wall)
