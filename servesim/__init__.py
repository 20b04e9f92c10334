"""servesim: a deterministic simulator of a virtual LLM-serving device, for unit 07.

Policies import what they need from here: ``Batch``, ``PrefillChunk``, ``SchedulerView`` and
``Sequence`` (with its ``Phase``).
"""

from .batch import Batch, PrefillChunk
from .device import DeviceProfile
from .engine import PolicyError, SchedulerView, Timeline, simulate
from .sequence import Phase, Sequence
from .trace import Request, Trace, TraceError, parse_trace, read_trace_file

ENGINE_VERSION = "1.0"

__all__ = [
    "ENGINE_VERSION",
    "Batch",
    "DeviceProfile",
    "Phase",
    "PolicyError",
    "PrefillChunk",
    "Request",
    "SchedulerView",
    "Sequence",
    "Timeline",
    "Trace",
    "TraceError",
    "parse_trace",
    "read_trace_file",
    "simulate",
]
