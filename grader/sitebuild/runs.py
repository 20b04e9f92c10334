"""Reference runs for lesson pages, made at build time, and lookups templates need.

All runs use the unit's reference solution (``grader.reference``) and the device of its
``unit.yaml``; nothing here is typed in. Which runs a lesson shows is the unit's choice (its
site plug-in, see :mod:`grader.sitebuild.plugins`); this module holds only the generic parts.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def trace_json(trace) -> dict:
    """A loaded trace as the templates read it: {"name", "description", "requests": [...]}."""
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


def device(unit: Unit, **overrides):
    """The unit's device (unit.yaml), with overrides; a bad one is a one-line BuildError."""
    try:
        return reference.device_profile(unit, **overrides)
    except (TypeError, ValueError) as exc:
        raise BuildError(f"unit {unit.id}: bad device in unit.yaml: {exc}") from None


def policy_run(unit: Unit, trace, policy: str, params: dict, dev, label: str) -> PolicyRun:
    """One reference run of the unit's solution, wrapped for the templates."""
    return PolicyRun(label, reference.run_reference(unit, trace, policy, params, dev))


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
    """The longest ITL of ``request_id`` and the submissions inside it.

    Of equally long gaps, the earliest.
    """
    times = run.req[request_id]["tokenTimesMs"]
    if len(times) < 2:
        raise BuildError(f"{run.label}: {request_id} has no inter-token gap")
    j = max(range(1, len(times)), key=lambda k: (times[k] - times[k - 1], -k))
    before, after = times[j - 1], times[j]
    inside = [e for e in run.events if e["startMs"] >= before and e["endMs"] <= after]
    return Gap(request_id, before, after, inside)


def event_ms(event: dict) -> float:
    return event["endMs"] - event["startMs"]
