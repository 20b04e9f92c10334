"""The thin layer between the public tests and your code: run a policy, call a measurement.

Standard library only, so ``python3 run_tests.py`` works without pytest (pytest works too).
"""

from __future__ import annotations

import json
from pathlib import Path

import measure
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


def device(name: str | None = None) -> DeviceProfile:
    """The lab's device, or a profile from the lab's devices/ folder."""
    if name is None:
        return LAB.device
    doc = json.loads((LAB.folder / "devices" / f"{name}.json").read_text(encoding="utf-8"))
    return DeviceProfile.from_json(doc["device"], source=f"devices/{name}.json")


def _call(module, name: str, *args, **kwargs):
    """``module.name(...)``; a stub fails the test with one line naming the function, or skips
    it when the function belongs to an optional or challenge part not started yet."""
    try:
        return getattr(module, name)(*args, **kwargs)
    except NotImplementedError as exc:
        message, skip = stub_outcome(exc, LAB)
        if skip:
            pytest.skip(message)
        raise NotImplementedYet(message) from None


def run_policy(trace, policy: str, device_name: str | None = None, **params) -> dict:
    """Simulate ``policy`` from policies.py; ``trace`` is a public trace name or a request list."""
    spec = LAB.policy(policy)
    params = {name: params.get(name, meta["default"]) for name, meta in spec.params.items()}
    if isinstance(trace, str):
        trace = read_trace_file(LAB.traces_dir / f"{trace}.json")
    else:
        trace = parse_trace({"name": "test", "requests": trace}, source="test trace")
    dev = device(device_name)
    admit = None
    if spec.admit:
        admit = lambda request, view: _call(policies, spec.admit, request, view)  # noqa: E731
    timeline = simulate(
        trace,
        lambda view: _call(policies, spec.function, view, **params),
        dev,
        budget=params.get("budget"),
        admit=admit,
    )
    return build_run(policy, params, dev, timeline, None, extended=True)


def call_measure(name: str, *args, **kwargs):
    """Call a function of measure.py, naming it if it is still a stub."""
    return _call(measure, name, *args, **kwargs)


def expected(snapshot: str, policy: str) -> dict:
    doc = json.loads((EXPECTED_DIR / f"{snapshot}.json").read_text(encoding="utf-8"))
    return doc["runs"][policy]


def first_divergence(want: dict, run: dict) -> str | None:
    """The earliest (in time) token or status where ``run`` differs from the expected run."""
    got = {r["id"]: r for r in run["requests"]}
    found = []
    for rid, times in want["tokenTimesMs"].items():
        mine = got[rid]["tokenTimesMs"] if rid in got else []
        token = _token_divergence(times, mine)
        status = got[rid]["status"] if rid in got else None
        if token is not None:
            when, index, a, b = token
            message = f"token #{index + 1}: expected {_ms(a)}, got {_ms(b)}"
            found.append((when, f"request {rid}, {message}"))
        elif status != want["status"][rid]:
            when = got[rid]["statusMs"] if rid in got else 0.0
            message = f"expected status {want['status'][rid]}, got {status}"
            found.append((when, f"request {rid}: {message}"))
    return min(found)[1] if found else None


def _token_divergence(times: list[float], mine: list[float]):
    for index in range(max(len(times), len(mine))):
        a = times[index] if index < len(times) else None
        b = mine[index] if index < len(mine) else None
        if a is None or b is None or abs(a - b) > 1e-9:
            return min(t for t in (a, b) if t is not None), index, a, b
    return None


def _ms(value) -> str:
    return "no token" if value is None else f"{value:.2f} ms"


def check_timeline(snapshot: str, policy: str, run: dict) -> None:
    divergence = first_divergence(expected(snapshot, policy), run)
    if divergence is not None:
        see = show_command(run, snapshot, policy, LAB.folder)
        pytest.fail(f"{policy} on {snapshot}: first difference: {divergence}\n{see}")


def cache_after_steps(run: dict) -> list[dict[str, int]]:
    """Each KV holder's cached tokens after every step, replayed from the event log."""
    ends = {r["id"]: r["statusMs"] for r in run["requests"] if r["status"] != "rejected"}
    cache: dict[str, int] = {}
    after = []
    for event in run["events"]:
        for rid in event["preempt"]:
            cache.pop(rid, None)
        for chunk in event["prefill"]:
            cache[chunk["id"]] = cache.get(chunk["id"], 0) + chunk["tokens"]
        for rid in event["decode"]:
            cache[rid] += 1
        after.append(dict(cache))
        for rid in [rid for rid in cache if ends[rid] <= event["endMs"]]:
            del cache[rid]
    return after


def pages(cache: dict[str, int], page_tokens: int = 16) -> int:
    return sum(-(-tokens // page_tokens) for tokens in cache.values())


def running_at(run: dict, at_ms: float) -> set[str]:
    """Requests that had their first token by ``at_ms`` and were not done yet."""
    return {
        r["id"]
        for r in run["requests"]
        if r["tokenTimesMs"] and r["tokenTimesMs"][0] <= at_ms < r["statusMs"]
    }
