"""Helpers the repo tests share: the unit, reference runs, lab folder copies.

The engine is the top-level ``servesim`` package, imported like any other; nothing here puts a
lab folder on ``sys.path``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader import labfolder, reference
from grader.units import Unit, load_unit

UNIT = load_unit("unit07")


def run_ref(
    trace: str, policy: str, overhead_ms: float | None = None, fault=None, device=None, **params
):
    """A reference run entry on a named trace, with the unit's defaults for unset values
    (``device``: snake_case overrides of the unit's device)."""
    spec = next(p for p in UNIT.policies if p["name"] == policy)
    params = {name: params.get(name, meta["default"]) for name, meta in spec["params"].items()}
    overrides = dict(device or {}) | ({} if overhead_ms is None else {"overhead_ms": overhead_ms})
    device = reference.device_profile(UNIT, **overrides)
    return reference.run_reference(
        UNIT, reference.load_trace(UNIT, trace), policy, params, device, fault
    )


def rows_trace(rows):
    """A trace of requests ``R0, R1, ...`` from ``(arrivalMs, inputTokens, outputTokens)`` rows."""
    import servesim

    doc = {
        "name": "random",
        "requests": [
            {"id": f"R{i}", "arrivalMs": a, "inputTokens": p, "outputTokens": o}
            for i, (a, p, o) in enumerate(rows)
        ],
    }
    return servesim.parse_trace(doc)


def affine_devices(**fields):
    """A hypothesis strategy of lab devices with assorted affine costs (``fields``: strategies
    of the other ``DeviceProfile`` fields)."""
    import servesim
    from hypothesis import strategies as st

    return st.builds(
        servesim.DeviceProfile,
        prefill_ms_per_token=st.sampled_from([0.0, 0.1, 1.0, 0.3]),
        decode_batch_ms=st.sampled_from([1.0, 20.0, 0.7]),
        decode_ms_per_seq=st.sampled_from([0.0, 0.05, 0.3]),
        overhead_ms=st.sampled_from([0.0, 0.25, 0.1]),
        **fields,
    )


def log_contexts(run: dict) -> list[dict[str, int]]:
    """The cached positions of each member of each event, before it runs, from the log alone:
    a preempted sequence drops its cache at the start of its step, a prefill chunk adds its
    tokens, a decode adds one position."""
    cache: dict[str, int] = {}
    out = []
    for event in run["events"]:
        for rid in event.get("preempt", []):
            cache[rid] = 0
        members = [*event["decode"], *(c["id"] for c in event["prefill"])]
        out.append({rid: cache.get(rid, 0) for rid in members})
        for chunk in event["prefill"]:
            cache[chunk["id"]] = cache.get(chunk["id"], 0) + chunk["tokens"]
        for rid in event["decode"]:
            cache[rid] = cache.get(rid, 0) + 1
    return out


def copy_lab(dest: Path, solution: bool, unit: Unit = UNIT) -> Path:
    """The unit's lab folder made at ``dest`` as students get it (``grader.labfolder``); with
    ``solution`` the reference files overlay it."""
    labfolder.assemble(unit, dest)
    if solution:
        for name in unit.editable:
            shutil.copyfile(unit.solutions_dir / name, dest / name)
    return dest


def simulate_cli(lab: Path, *args: str) -> subprocess.CompletedProcess:
    """Run the lab's simulate.py as a student would."""
    return subprocess.run(
        [sys.executable, "simulate.py", *args], cwd=lab, capture_output=True, text=True, timeout=60
    )


# Marks of tests that cannot share the machine (scripts/test.sh runs them apart, one at a time).
WALL_CLOCK = pytest.mark.serial(
    reason="bounds wall-clock time, which other tests on the same cores stretch"
)
READABLE_REPO = pytest.mark.serial(
    reason="needs the repo readable by other users, which the rlimits-mode tests take away "
    "while they run (tests/sandbox/conftest.py)"
)
