"""The thin layer between the public tests and your code: run a policy, read a run.

Standard library only, so ``python3 run_tests.py`` works without pytest (pytest works too).
"""

from __future__ import annotations

import json
from pathlib import Path

import policies
import pytest
from servesim import DeviceProfile, simulate
from servesim.labconfig import load_lab
from servesim.runfile import build_run
from servesim.runview.hint import show_command
from servesim.stubs import stub_outcome
from servesim.trace import parse_trace, read_trace_file

LAB = load_lab()
EXPECTED_DIR = Path(__file__).resolve().parent / "expected"


class NotImplementedYet(AssertionError):
    """A stub still raises NotImplementedError; the message names the function and its part."""


def device(name: str | None = None, **changes) -> DeviceProfile:
    """The lab's device, or a profile from the lab's devices/ folder, with ``changes`` (JSON
    field names, e.g. ``kvPages=12``)."""
    if name is None:
        doc = LAB.device.to_json()
    else:
        path = LAB.folder / "devices" / f"{name}.json"
        doc = json.loads(path.read_text(encoding="utf-8"))["device"]
    return DeviceProfile.from_json({**doc, **changes}, source=name or "lab.json")


def _call(name: str, *args, **kwargs):
    try:
        return getattr(policies, name)(*args, **kwargs)
    except NotImplementedError as exc:
        message, skip = stub_outcome(exc, LAB)
        if skip:
            pytest.skip(message)
        raise NotImplementedYet(message) from None


def run_policy(trace, policy: str, dev: DeviceProfile | None = None, **params) -> dict:
    """Simulate ``policy`` from policies.py; ``trace`` is a public trace name or a request list."""
    spec = LAB.policy(policy)
    params = {name: params.get(name, meta["default"]) for name, meta in spec.params.items()}
    if isinstance(trace, str):
        trace = read_trace_file(LAB.traces_dir / f"{trace}.json")
    else:
        trace = parse_trace({"name": "test", "requests": trace}, source="test trace")
    dev = dev or device()
    timeline = simulate(
        trace,
        lambda view: _call(spec.function, view, **params),
        dev,
        budget=params.get("budget"),
    )
    return build_run(policy, params, dev, timeline, None, extended=True)


def check_timeline(snapshot: str, policy: str, run: dict) -> None:
    """Every token time and status of ``run`` as in the reference's run of ``snapshot``."""
    doc = json.loads((EXPECTED_DIR / f"{snapshot}.json").read_text(encoding="utf-8"))
    want = doc["runs"][policy]
    got = {r["id"]: r for r in run["requests"]}
    found = []
    for rid, times in want["tokenTimesMs"].items():
        mine = got[rid]["tokenTimesMs"]
        for index in range(max(len(times), len(mine))):
            a = times[index] if index < len(times) else None
            b = mine[index] if index < len(mine) else None
            if a is None or b is None or abs(a - b) > 1e-9:
                when = min(t for t in (a, b) if t is not None)
                found.append((when, f"request {rid}, token #{index + 1}: expected {a}, got {b}"))
                break
        else:
            if got[rid]["status"] != want["status"][rid]:
                message = f"expected status {want['status'][rid]}, got {got[rid]['status']}"
                found.append((got[rid]["statusMs"], f"request {rid}: {message}"))
    if found:
        see = show_command(run, snapshot, policy, LAB.folder)
        pytest.fail(f"{policy} on {snapshot}: first difference: {min(found)[1]}\n{see}")


def pages_in_use(run: dict) -> list[int]:
    """Pages with at least one reference after each step, replayed from the run's pageOps."""
    refs: dict[int, int] = {}
    after = []
    for event in run["events"]:
        for _op, _rid, page, _generation, count in event.get("pageOps", []):
            refs[page] = count
        after.append(sum(1 for count in refs.values() if count > 0))
    return after


def started_chunks(run: dict) -> dict[str, list[dict]]:
    """Each request's chunks that started a (re)prefill (``fromToken`` equal to ``cached``: 0, or
    the positions it claimed from the cache), in step order."""
    out: dict[str, list[dict]] = {}
    for event in run["events"]:
        for chunk in event["prefill"]:
            if chunk["fromToken"] == chunk.get("cached", 0):
                out.setdefault(chunk["id"], []).append({**chunk, "step": event["index"]})
    return out
