"""Experimental protocols: an experiment is a file, and its measurement window.

A protocol is JSON (``protocols/*.json`` in the lab folder, ``schemas/protocol.schema.json``)::

    {"name", "description"?,
     "workload": {"sizes": TRACE,
                  "arrivals": {"process": "poisson"}
                            | {"process": "bursty", "burstFactor", "burstFraction", "periodMs"}
                            | {"process": "closed", "thinkMs", "think": "exponential"|"fixed"}},
     "loads": [...],            # offered load: req/s (poisson, bursty) or users (closed)
     "requestsPerRun", "warmupRequests", "cooldownRequests",
     "slo": {"ttftMs"?, "tpotMs"?},
     "targets": {"attainment", "qualityPassRate"?},
     "steadyTolerance", "seeds": [...], "confidence"}

Each seed is one replication: it draws that run's arrivals, request sizes and quality outcomes,
so replications are independent. ``load_protocol`` validates every field and raises
``ProtocolError`` naming the file and the field.

``measurement_window`` is the one window of the unit: ``sweep.py``, ``measure.py``,
``simulate.py --protocol``, the grader's goodput cases, the notebook and the lesson all call it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .arrivals import THINK_KINDS, ClosedLoop
from .fields import Fields, is_integer, is_number
from .load import Burst, open_loop
from .trace import Trace

PROCESSES = ("poisson", "bursty", "closed")
FIELDS = (
    "name",
    "description",
    "workload",
    "loads",
    "requestsPerRun",
    "warmupRequests",
    "cooldownRequests",
    "slo",
    "targets",
    "steadyTolerance",
    "seeds",
    "confidence",
)


class ProtocolError(ValueError):
    """A protocol file that cannot be used; the message names the file and the field."""


class _ProtocolFields(Fields):
    error = ProtocolError


class WindowError(ValueError):
    """A run whose requests leave no measurement window."""


@dataclass(frozen=True)
class Window:
    """The measurement window: a request belongs to it when ``start_ms <= arrivalMs < end_ms``."""

    start_ms: float
    end_ms: float

    @property
    def length_s(self) -> float:
        return (self.end_ms - self.start_ms) / 1000

    def contains(self, arrival_ms: float) -> bool:
        return self.start_ms <= arrival_ms < self.end_ms

    def select(self, requests: list[dict]) -> list[dict]:
        """The run-file request records that arrived in the window."""
        return [r for r in requests if self.start_ms <= r["arrivalMs"] < self.end_ms]


def measurement_window(arrivals_ms, warmup_requests: int, cooldown_requests: int) -> Window:
    """The measurement window of a run, from its arrival times alone.

    Order the arrivals in time. The first ``warmup_requests`` are the warm-up, the last
    ``cooldown_requests`` (at least 1) the cool-down. The window starts at the arrival of the
    first request after the warm-up and ends at the arrival of the first request of the
    cool-down: ``[start, end)``, so it holds exactly the requests in between (ties at ``end``
    stay out). Every rate divides by ``end - start``. A trace with no warm-up and a cool-down
    of 1 (a graded trace) is measured from its first arrival to its last.
    """
    if warmup_requests < 0 or cooldown_requests < 1:
        raise WindowError("the warm-up must be >= 0 requests and the cool-down >= 1")
    ordered = sorted(arrivals_ms)
    if len(ordered) <= warmup_requests + cooldown_requests:
        raise WindowError(
            f"{len(ordered)} requests leave no window after a warm-up of {warmup_requests} "
            f"and a cool-down of {cooldown_requests}"
        )
    start, end = ordered[warmup_requests], ordered[len(ordered) - cooldown_requests]
    if not end > start:
        raise WindowError(f"the window [{start:g}, {end:g}) ms is empty")
    return Window(start, end)


@dataclass(frozen=True)
class Arrivals:
    process: str  # poisson | bursty | closed
    burst: Burst | None = None
    think_ms: float | None = None
    think: str = "exponential"


@dataclass(frozen=True)
class Protocol:
    name: str
    description: str
    sizes: str  # a trace name (traces/NAME.json) or a path, relative to the lab folder
    arrivals: Arrivals
    loads: tuple[float, ...]
    requests_per_run: int
    warmup_requests: int
    cooldown_requests: int
    slo_ttft_ms: float | None
    slo_tpot_ms: float | None
    attainment_target: float
    quality_target: float | None
    steady_tolerance: float
    seeds: tuple[int, ...]
    confidence: float

    @property
    def closed(self) -> bool:
        return self.arrivals.process == "closed"

    @property
    def load_unit(self) -> str:
        return "users" if self.closed else "req/s"

    def window(self, requests: list[dict]) -> Window:
        """This protocol's measurement window of a run's request records."""
        arrivals = [r["arrivalMs"] for r in requests]
        return measurement_window(arrivals, self.warmup_requests, self.cooldown_requests)

    def workload(
        self, sizes: Trace, load: float, seed: int
    ) -> tuple[Trace | None, ClosedLoop | None]:
        """One replication's arrivals: an open-loop trace, or a closed loop (then no trace)."""
        if self.closed:
            closed = ClosedLoop(
                int(load),
                self.arrivals.think_ms,
                self.requests_per_run,
                sizes,
                seed=seed,
                think=self.arrivals.think,
            )
            return None, closed
        return open_loop(sizes, load, self.requests_per_run, seed, self.arrivals.burst), None

    def narrowed(self, requests=None, replications=None, loads=None) -> Protocol:
        """The same protocol with fewer requests, the first ``replications`` seeds or other
        loads (for a quick look; such a run is not the protocol's verdict)."""
        doc = self.to_json()
        if requests is not None:
            doc["requestsPerRun"] = requests
        if replications is not None:
            doc["seeds"] = doc["seeds"][:replications]
        if loads is not None:
            doc["loads"] = list(loads)
        return parse_protocol(doc, f"protocol {self.name} (narrowed)")

    def to_json(self) -> dict:
        arrivals = {"process": self.arrivals.process}
        if self.arrivals.burst is not None:
            b = self.arrivals.burst
            arrivals |= {
                "burstFactor": b.factor,
                "burstFraction": b.fraction,
                "periodMs": b.period_ms,
            }
        if self.closed:
            arrivals |= {"thinkMs": self.arrivals.think_ms, "think": self.arrivals.think}
        slo = {"ttftMs": self.slo_ttft_ms, "tpotMs": self.slo_tpot_ms}
        targets = {"attainment": self.attainment_target, "qualityPassRate": self.quality_target}
        return {
            "name": self.name,
            "description": self.description,
            "workload": {"sizes": self.sizes, "arrivals": arrivals},
            "loads": list(self.loads),
            "requestsPerRun": self.requests_per_run,
            "warmupRequests": self.warmup_requests,
            "cooldownRequests": self.cooldown_requests,
            "slo": {k: v for k, v in slo.items() if v is not None},
            "targets": {k: v for k, v in targets.items() if v is not None},
            "steadyTolerance": self.steady_tolerance,
            "seeds": list(self.seeds),
            "confidence": self.confidence,
        }


def _arrivals(fields: _ProtocolFields) -> Arrivals:
    process = fields.need("process")
    if process not in PROCESSES:
        fields.fail("process", f"must be one of {', '.join(PROCESSES)}")
    if process == "poisson":
        fields.only(("process",))
        return Arrivals("poisson")
    if process == "bursty":
        fields.only(("process", "burstFactor", "burstFraction", "periodMs"))
        factor = fields.number("burstFactor", 1.0, open_low=True)
        fraction = fields.number("burstFraction", 0.0, 1.0, open_low=True, open_high=True)
        if factor * fraction > 1:
            fields.fail("burstFraction", "times burstFactor must be at most 1 (the mean rate)")
        period = fields.number("periodMs", 0.0, open_low=True)
        return Arrivals("bursty", burst=Burst(factor, fraction, period))
    fields.only(("process", "thinkMs", "think"))
    think = fields.doc.get("think", "exponential")
    if think not in THINK_KINDS:
        fields.fail("think", f"must be one of {', '.join(THINK_KINDS)}")
    return Arrivals("closed", think_ms=fields.number("thinkMs", 0.0), think=think)


def parse_protocol(doc, where: str = "protocol") -> Protocol:
    """Validate a decoded protocol document and return it as a ``Protocol``."""
    top = _ProtocolFields(doc, where)
    top.only(FIELDS)
    workload = top.child("workload")
    workload.only(("sizes", "arrivals"))
    arrivals = _arrivals(workload.child("arrivals"))
    loads = top.need("loads")
    if not isinstance(loads, list) or not loads or not all(is_number(x) and x > 0 for x in loads):
        top.fail("loads", "must be a non-empty list of numbers > 0")
    if arrivals.process == "closed" and not all(is_integer(x) for x in loads):
        top.fail("loads", "must list whole numbers of users for a closed loop")
    if len(set(loads)) != len(loads):
        top.fail("loads", "must not repeat a load")
    requests = top.integer("requestsPerRun", 2)
    warmup = top.integer("warmupRequests", 0)
    cooldown = top.integer("cooldownRequests", 1)
    if requests <= warmup + cooldown:
        top.fail("requestsPerRun", "must exceed warmupRequests + cooldownRequests")
    slo = top.child("slo")
    slo.only(("ttftMs", "tpotMs"))
    targets = top.child("targets")
    targets.only(("attainment", "qualityPassRate"))
    seeds = top.need("seeds")
    if not isinstance(seeds, list) or len(seeds) < 2 or not all(is_integer(s) for s in seeds):
        top.fail("seeds", "must list at least 2 integer seeds (one per replication)")
    if len(set(seeds)) != len(seeds):
        top.fail("seeds", "must not repeat a seed (replications must be independent)")
    return Protocol(
        name=top.text("name"),
        description=top.text("description", ""),
        sizes=workload.text("sizes"),
        arrivals=arrivals,
        loads=tuple(float(x) if not is_integer(x) else x for x in loads),
        requests_per_run=requests,
        warmup_requests=warmup,
        cooldown_requests=cooldown,
        slo_ttft_ms=slo.number("ttftMs", 0.0, open_low=True, optional=True),
        slo_tpot_ms=slo.number("tpotMs", 0.0, open_low=True, optional=True),
        attainment_target=targets.number("attainment", 0.0, 1.0, open_low=True),
        quality_target=targets.number("qualityPassRate", 0.0, 1.0, open_low=True, optional=True),
        steady_tolerance=top.number("steadyTolerance", 0.0),
        seeds=tuple(seeds),
        confidence=top.number("confidence", 0.0, 1.0, open_low=True, open_high=True),
    )


def load_protocol(path) -> Protocol:
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProtocolError(f"protocol {path}: cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise ProtocolError(f"protocol {path}: not valid JSON ({exc})") from None
    return parse_protocol(doc, f"protocol {path}")


__all__ = [
    "Protocol",
    "ProtocolError",
    "Window",
    "WindowError",
    "load_protocol",
    "measurement_window",
    "parse_protocol",
]
