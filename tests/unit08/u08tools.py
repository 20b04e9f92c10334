"""Helpers the unit 08 repo tests share: the unit, its solution modules, reference runs."""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import replace

import servesim

from grader import reference
from grader.units import REPO_ROOT, load_unit

UNIT08 = load_unit("unit08")
CHAPTER_DEVICES = REPO_ROOT / "starter" / "unit08" / "devices"


def solution_module(name: str):
    """A solution file of unit 08 (``measure`` or ``policies``) under a private module name."""
    if name == "policies":
        return reference.solution_policies(UNIT08)
    key = f"_infralab_solution_unit08_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, UNIT08.solutions_dir / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


measure = solution_module("measure")


def record(rid, arrival_ms, end_ms, status="completed", tokens=None):
    """A run-file request record with just the fields measure.py reads."""
    tokens = list(tokens or ([] if status == "rejected" else [end_ms]))
    first = tokens[0] if tokens else None
    return {
        "id": rid,
        "arrivalMs": arrival_ms,
        "statusMs": end_ms,
        "status": status,
        "tokenTimesMs": tokens,
        "ttftMs": None if first is None else first - arrival_ms,
        "tpotMs": (tokens[-1] - first) / (len(tokens) - 1) if len(tokens) > 1 else None,
    }


def device(name: str | None = None, **overrides):
    """The unit's device, or a profile from the lab's ``devices/`` folder, with overrides."""
    if name is None:
        profile = reference.device_profile(UNIT08)
    else:
        doc = json.loads((CHAPTER_DEVICES / f"{name}.json").read_text(encoding="utf-8"))
        profile = servesim.DeviceProfile.from_json(doc["device"], source=name)
    return replace(profile, **overrides)


def run08(trace, policy: str, dev=None, queue_cap=None, closed=None, **params) -> dict:
    """A reference run entry; ``trace`` is a public trace name or a parsed ``Trace``."""
    spec = next(p for p in UNIT08.policies if p["name"] == policy)
    params = {name: params.get(name, meta["default"]) for name, meta in spec["params"].items()}
    if isinstance(trace, str):
        trace = reference.load_trace(UNIT08, trace)
    return reference.run_reference(
        UNIT08, trace, policy, params, dev or device(), queue_cap=queue_cap, closed=closed
    )


def make_trace(requests: list[dict], name: str = "made"):
    from servesim.trace import parse_trace

    return parse_trace({"name": name, "requests": requests}, source=name)


def by_id(run: dict) -> dict[str, dict]:
    return {r["id"]: r for r in run["requests"]}


def cache_after_steps(run: dict) -> list[dict[str, int]]:
    """Replayed from the event log alone: each holder's cached tokens after every step.

    A prefill chunk adds its tokens, a decode one token; a preempted sequence drops its cache
    at the start of the step; a sequence whose last token or cancellation falls at a step's end
    is listed for that step and gone from the next.
    """
    ends = {r["id"]: r["statusMs"] for r in run["requests"] if r["status"] != "rejected"}
    cache: dict[str, int] = {}
    after = []
    for event in run["events"]:
        for rid in event.get("preempt", []):
            cache.pop(rid, None)
        for chunk in event["prefill"]:
            cache[chunk["id"]] = cache.get(chunk["id"], 0) + chunk["tokens"]
        for rid in event["decode"]:
            cache[rid] += 1
        after.append(dict(cache))
        for rid in [rid for rid in cache if ends[rid] <= event["endMs"]]:
            del cache[rid]
    return after


def pages(cache: dict[str, int], page_tokens: int = 16, ids=None) -> int:
    return sum(
        -(-tokens // page_tokens) for rid, tokens in cache.items() if ids is None or rid in ids
    )


def copy_lab08(dest, solution: bool):
    """The unit 08 lab folder made at ``dest``; with ``solution`` the reference files overlay it."""
    from labtools import copy_lab

    return copy_lab(dest, solution, UNIT08)


def lab_python(lab, *args: str, timeout: float = 300):
    """Run a lab script with python3 alone: ``-S`` keeps every installed package out of reach."""
    import subprocess

    return subprocess.run(
        [sys.executable, "-S", *args], cwd=lab, capture_output=True, text=True, timeout=timeout
    )
