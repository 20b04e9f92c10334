"""The thin layer between the public tests and your code: run one policy, get its run entry."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import policies
import pytest
from servesim.engine import simulate
from servesim.labconfig import load_lab
from servesim.runfile import build_run
from servesim.stubs import stub_outcome
from servesim.trace import read_trace_file

LAB = load_lab()
EXPECTED_DIR = Path(__file__).resolve().parent / "expected"


def run_policy(trace: str, policy: str, overhead_ms: float | None = None, **params) -> dict:
    """Simulate ``policy`` from policies.py on a public trace; unset params take lab defaults."""
    spec = LAB.policy(policy)
    params = {name: params.get(name, meta["default"]) for name, meta in spec.params.items()}
    device = LAB.device if overhead_ms is None else replace(LAB.device, overhead_ms=overhead_ms)
    function = getattr(policies, spec.function)
    try:
        timeline = simulate(
            read_trace_file(LAB.traces_dir / f"{trace}.json"),
            lambda view: function(view, **params),
            device,
        )
    except NotImplementedError as exc:
        message, skip = stub_outcome(exc, LAB)
        if skip:
            pytest.skip(message)
        pytest.fail(message, pytrace=False)
    return build_run(policy, params, device, timeline, fault=None)


def by_id(run: dict) -> dict[str, dict]:
    return {req["id"]: req for req in run["requests"]}


def first_divergence(expected: dict[str, list[float]], run: dict) -> str | None:
    """Describe the first token time (in time order) where ``run`` differs from ``expected``."""
    got = {req["id"]: req["tokenTimesMs"] for req in run["requests"]}
    mismatches = []
    for rid, times in expected.items():
        mine = got.get(rid, [])
        for index in range(max(len(times), len(mine))):
            want = times[index] if index < len(times) else None
            have = mine[index] if index < len(mine) else None
            if want is None or have is None or abs(want - have) > 1e-9:
                when = min(t for t in (want, have) if t is not None)
                mismatches.append((when, rid, index, want, have))
                break
    if not mismatches:
        return None
    when, rid, index, want, have = min(mismatches)
    want_text = "no token" if want is None else f"{want:.2f} ms"
    have_text = "no token" if have is None else f"{have:.2f} ms"
    position = f"token #{index + 1} (index {index})"
    return f"request {rid}, {position}: expected {want_text}, got {have_text}"


def expected_token_times(trace: str, policy: str) -> dict[str, list[float]]:
    doc = json.loads((EXPECTED_DIR / f"{trace}.json").read_text(encoding="utf-8"))
    return doc["runs"][policy]["tokenTimesMs"]
