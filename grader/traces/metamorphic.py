"""Metamorphic transforms of traces and the matching transforms of run results.

Two relations hold for any correct policy on a simulated device:

- relabelling request ids relabels the results (ids carry no meaning; trace order does);
- shifting every arrival by a constant shifts every time in the run by that constant.

The grader uses transformed copies of known traces as cases, so an answer keyed to a
particular trace (its ids or its arrival times) fails there; the tests check both relations on
the reference solution.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass

TIME_FIELDS_REQUEST = ("arrivalMs", "firstTokenMs", "finishMs")


@dataclass(frozen=True)
class Transform:
    relabel_seed: int | None = None  # None: keep ids
    shift_ms: float = 0.0

    @classmethod
    def from_json(cls, doc) -> Transform:
        if not isinstance(doc, dict):
            raise ValueError("must be a mapping with 'relabelSeed' and/or 'shiftMs'")
        unknown = sorted(set(doc) - {"relabelSeed", "shiftMs"})
        if unknown:
            raise ValueError(f"unknown field(s) {', '.join(unknown)}")
        seed = doc.get("relabelSeed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise ValueError("relabelSeed must be an integer")
        shift = doc.get("shiftMs", 0.0)
        if not isinstance(shift, (int, float)) or isinstance(shift, bool) or shift < 0:
            raise ValueError("shiftMs must be a number >= 0")
        return cls(seed, float(shift))

    def to_json(self) -> dict:
        return {"relabelSeed": self.relabel_seed, "shiftMs": self.shift_ms}

    def mapping(self, ids: list[str]) -> dict[str, str]:
        return relabel_mapping(ids, self.relabel_seed) if self.relabel_seed is not None else {}

    def apply(self, trace_doc: dict) -> dict:
        """The transformed trace document (the input is left alone)."""
        doc = shift_trace(trace_doc, self.shift_ms) if self.shift_ms else copy.deepcopy(trace_doc)
        if self.relabel_seed is not None:
            ids = [r["id"] for r in doc["requests"]]
            doc = relabel_trace(doc, self.mapping(ids))
        return doc


def relabel_mapping(ids: list[str], seed: int) -> dict[str, str]:
    """New opaque ids (``q<number>``) handed out in a seeded random order."""
    numbers = list(range(1, len(ids) + 1))
    random.Random(seed).shuffle(numbers)
    return {old: f"q{n}" for old, n in zip(ids, numbers, strict=False)}


def relabel_trace(doc: dict, mapping: dict[str, str]) -> dict:
    out = copy.deepcopy(doc)
    for req in out["requests"]:
        req["id"] = mapping[req["id"]]
    return out


def shift_trace(doc: dict, delta_ms: float) -> dict:
    out = copy.deepcopy(doc)
    for req in out["requests"]:
        req["arrivalMs"] = req["arrivalMs"] + delta_ms
    return out


def relabel_run(run: dict, mapping: dict[str, str]) -> dict:
    """A run entry with every request id replaced through ``mapping``."""
    out = copy.deepcopy(run)
    for req in out["requests"]:
        req["id"] = mapping[req["id"]]
    for event in out["events"]:
        event["decode"] = [mapping[i] for i in event["decode"]]
        for chunk in event["prefill"]:
            chunk["id"] = mapping[chunk["id"]]
    return out


def shift_run(run: dict, delta_ms: float) -> dict:
    """A run entry with every absolute time moved by ``delta_ms`` (durations unchanged)."""
    out = copy.deepcopy(run)
    for req in out["requests"]:
        for key in TIME_FIELDS_REQUEST:
            req[key] = req[key] + delta_ms
        req["tokenTimesMs"] = [t + delta_ms for t in req["tokenTimesMs"]]
    for event in out["events"]:
        event["startMs"] += delta_ms
        event["endMs"] += delta_ms
    if "summary" in out:
        out["summary"]["allDoneMs"] += delta_ms
    return out
