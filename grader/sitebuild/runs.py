"""The simulator runs behind every number of the unit 07 lesson, made at build time.

All runs use the reference solution (``grader.reference``) and the device of the unit's
``unit.yaml``; nothing here is typed in. The lesson template reads these objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import reference
from ..units import Unit
from .claims import BuildError


@dataclass(frozen=True)
class PolicyRun:
    """One reference run (the run-file contract) with lookups the templates need."""

    label: str
    run: dict

    @property
    def req(self) -> dict[str, dict]:
        return {r["id"]: r for r in self.run["requests"]}

    @property
    def events(self) -> list[dict]:
        return self.run["events"]

    @property
    def summary(self) -> dict:
        return self.run["summary"]

    @property
    def all_done(self) -> float:
        return self.summary["allDoneMs"]


@dataclass(frozen=True)
class Step:
    """One submission of the hand-computable timeline, with the tokens it emits."""

    start: float
    end: float
    prefill: list[dict]  # [{"id", "fromToken", "tokens"}]
    decode: list[str]
    first_tokens: list[dict]  # requests whose first token this step emits
    second_tokens: list[dict]  # requests whose second token this step emits

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class Gap:
    """The submissions between two consecutive tokens of one request (one ITL)."""

    request: str
    before: float
    after: float
    events: list[dict]

    @property
    def length(self) -> float:
        return self.after - self.before


@dataclass
class LessonRuns:
    unit: Unit
    device: dict
    chunk: int
    trace: dict  # mixed, as {"name", "description", "requests": [...]} (camelCase)
    unseen: dict
    mixed: dict[str, PolicyRun] = field(default_factory=dict)
    prefill_only: dict[str, PolicyRun] = field(default_factory=dict)
    prefill_only_no_overhead: dict[str, PolicyRun] = field(default_factory=dict)
    unseen_chunk: int = 4

    @property
    def policies(self) -> list[PolicyRun]:
        return [self.mixed["fcfs"], self.mixed["chunked"]]


def _trace_json(trace) -> dict:
    return {
        "name": trace.name,
        "description": trace.description,
        "requests": [
            {
                "id": r.id,
                "arrivalMs": r.arrival_ms,
                "inputTokens": r.input_tokens,
                "outputTokens": r.output_tokens,
            }
            for r in trace.requests
        ],
    }


def _default_chunk(unit: Unit) -> int:
    for spec in unit.policies:
        if spec["name"] == "chunked":
            return int(spec["params"]["chunk"]["default"])
    raise BuildError(f"unit {unit.id}: no 'chunked' policy in unit.yaml")


def _pair(unit: Unit, trace, device, chunk: int) -> dict[str, PolicyRun]:
    fcfs = reference.run_reference(unit, trace, "fcfs", {}, device)
    chunked = reference.run_reference(unit, trace, "chunked", {"chunk": chunk}, device)
    return {"fcfs": PolicyRun("fcfs", fcfs), "chunked": PolicyRun(f"chunk={chunk}", chunked)}


def make_runs(unit: Unit) -> LessonRuns:
    """Run every case the lesson talks about with the unit's device."""
    try:
        device = reference.device_profile(unit)
    except (TypeError, ValueError) as exc:
        raise BuildError(f"unit {unit.id}: bad device in unit.yaml: {exc}") from None
    chunk = _default_chunk(unit)
    mixed = reference.load_trace(unit, "mixed")
    prefill_only = reference.load_trace(unit, "prefill-only")
    no_overhead = reference.device_profile(unit, overhead_ms=0.0)
    return LessonRuns(
        unit=unit,
        device=device.to_json(),
        chunk=chunk,
        trace=_trace_json(mixed),
        unseen=_trace_json(reference.load_trace(unit, "unseen")),
        mixed=_pair(unit, mixed, device, chunk),
        prefill_only=_pair(unit, prefill_only, device, chunk),
        prefill_only_no_overhead=_pair(unit, prefill_only, no_overhead, chunk),
    )


def opening_steps(run: PolicyRun) -> list[Step]:
    """The submissions up to and including the first decode batch, with the tokens they emit."""
    steps = []
    for event in run.events:
        end = event["endMs"]
        firsts, seconds = [], []
        for request in run.req.values():
            times = request["tokenTimesMs"]
            if times[0] == end:
                firsts.append(request)
            if len(times) > 1 and times[1] == end:
                seconds.append(request)
        steps.append(
            Step(event["startMs"], end, event["prefill"], event["decode"], firsts, seconds)
        )
        if event["decode"]:
            break
    return steps


def widest_gap(run: PolicyRun, request_id: str) -> Gap:
    """The longest ITL of ``request_id`` (first one on ties) and the submissions inside it."""
    times = run.req[request_id]["tokenTimesMs"]
    if len(times) < 2:
        raise BuildError(f"{run.label}: {request_id} has no inter-token gap")
    j = max(range(1, len(times)), key=lambda k: (times[k] - times[k - 1], -k))
    before, after = times[j - 1], times[j]
    inside = [e for e in run.events if e["startMs"] >= before and e["endMs"] <= after]
    return Gap(request_id, before, after, inside)


def event_ms(event: dict) -> float:
    return event["endMs"] - event["startMs"]
