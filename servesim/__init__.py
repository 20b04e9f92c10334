"""servesim: a deterministic simulator of a virtual LLM-serving device and its serving rules.

Policies import what they need from here: ``Batch``, ``PrefillChunk``, ``Wait``,
``SchedulerView`` and ``Sequence`` (with its ``Phase`` and ``Status``). The device rules are in
``servesim.rules``.
"""

from . import rules
from .arrivals import ClosedLoop
from .batch import Batch, PrefillChunk, Wait
from .device import DeviceProfile
from .engine import PolicyError, Timeline, simulate
from .sequence import Phase, Sequence, Status
from .trace import Request, Trace, TraceError, parse_trace, read_trace_file
from .view import SchedulerView

ENGINE_VERSION = "1.0"

__all__ = [
    "ENGINE_VERSION",
    "Batch",
    "ClosedLoop",
    "DeviceProfile",
    "Phase",
    "PolicyError",
    "PrefillChunk",
    "Request",
    "SchedulerView",
    "Sequence",
    "Status",
    "Timeline",
    "Trace",
    "TraceError",
    "Wait",
    "parse_trace",
    "read_trace_file",
    "rules",
    "simulate",
]
