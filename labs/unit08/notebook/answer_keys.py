"""Unit 08's notebook answer keys (a plug-in: ``notebook.answer_keys`` in unit.yaml).

``grader.course.nbcheck`` loads this file by path and calls ``KEYS[case](unit)``. Every key is
computed at call time: the engine runs the reference policies (``grader.reference``) and the
reference ``measure.py`` (``solutions/unit08/measure.py``) measures the runs. The notebook's
setup (runs, SLOs, windows, loads, targets) is in ``notebook_setup.py``, which the notebook
builder reads too, so the two cannot drift apart. Each key has the shape the notebook asks for.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

from servesim.arrivals import ClosedLoop
from servesim.load import open_loop
from servesim.metrics import percentile
from servesim.tiers import load_tier

from grader import reference
from grader.plugins import load_file

SETUP = load_file(Path(__file__).resolve().parent / "notebook_setup.py")


def _measure(unit):
    """The reference measure.py of the unit."""
    return load_file(unit.solutions_dir / "measure.py")


def _trace(unit, name: str):
    return reference.load_trace(unit, str((unit.lab_dir / "traces" / f"{name}.json").resolve()))


def _device_file(unit, relative: str):
    doc = json.loads((unit.lab_dir / relative).read_text(encoding="utf-8"))
    servesim = reference.engine(unit)
    return servesim.DeviceProfile.from_json(doc.get("device", doc), source=relative)


def _tier(unit, relative: str):
    names = tuple(spec["name"] for spec in unit.policies)
    return load_tier(str(unit.lab_dir / relative), names)


def _params(unit, policy: str, budget: int | None) -> dict:
    spec = next(p for p in unit.policies if p["name"] == policy)
    params = {name: meta["default"] for name, meta in spec.get("params", {}).items()}
    if "budget" in params and budget is not None:
        params["budget"] = budget
    return params


def _tier_run(unit, tier, trace=None, closed=None) -> list[dict]:
    """The request records of ``tier``'s reference policy (open ``trace`` or ``closed``)."""
    params = _params(unit, tier.policy, tier.budget)
    run = reference.run_reference(
        unit, trace, tier.policy, params, tier.device, queue_cap=tier.queue_cap, closed=closed
    )
    return run["requests"]


def goodput_key(unit) -> dict:
    """Deliverable 1: goodput with both denominators and both TPOT means, per policy."""
    measure = _measure(unit)
    d1 = SETUP.D1
    slo = measure.Slo(ttft_ms=d1["slo_ttft_ms"], tpot_ms=d1["slo_tpot_ms"])
    device = _device_file(unit, d1["device"])
    trace = _trace(unit, d1["trace"])
    key = {}
    for policy in d1["policies"]:
        params = _params(unit, policy, None)
        run = reference.run_reference(
            unit, trace, policy, params, device, queue_cap=d1["queue_cap"]
        )
        requests = [r for r in run["requests"] if d1["start_ms"] <= r["arrivalMs"] < d1["end_ms"]]
        report = measure.goodput(requests, slo, d1["start_ms"], d1["end_ms"])
        by_request, by_token = measure.tpot_means(requests)
        key[policy] = {
            "submitted": report.submitted,
            "rejected": sum(r["status"] == measure.REJECTED for r in requests),
            "cancelled": sum(r["status"] == measure.CANCELLED for r in requests),
            "succeeded": report.succeeded,
            "qualifying": report.qualifying,
            "goodput_per_s": report.goodput_per_s,
            "attainment_submitted": report.attainment_over_submitted,
            "attainment_succeeded": report.attainment_over_succeeded,
            "tpot_request_weighted": by_request,
            "tpot_token_weighted": by_token,
        }
    return key


def _load_summary(measure, requests: list[dict], slo) -> dict:
    ttfts = [r["ttftMs"] for r in requests if r["status"] == measure.COMPLETED]
    end = max(r["statusMs"] for r in requests)
    report = measure.goodput(requests, slo, 0.0, math.nextafter(end, math.inf))
    return {
        "p50_ttft": percentile(ttfts, 50),
        "p99_ttft": percentile(ttfts, 99),
        "rejected": sum(r["status"] == measure.REJECTED for r in requests),
        "cancelled": sum(r["status"] == measure.CANCELLED for r in requests),
        "attainment_submitted": report.attainment_over_submitted,
        "attainment_succeeded": report.attainment_over_succeeded,
    }


def _protocol_runs(unit) -> tuple[dict, list[dict], list[dict]]:
    d2 = SETUP.D2
    tier = _tier(unit, d2["tier"])
    sizes = _trace(unit, d2["trace"])
    users, think = d2["users"], d2["think_ms"]
    closed = _tier_run(unit, tier, closed=ClosedLoop(users, think, d2["requests"], sizes))
    last_s = max(r["arrivalMs"] for r in closed) / 1000
    rate = {
        "measured": len(closed) / last_s,
        "little": users / (_mean_residence_s(closed) + think / 1000),
    }
    offered = round(rate["measured"], 2)
    opened = _tier_run(unit, tier, trace=open_loop(sizes, offered, d2["requests"], 0))
    return rate, closed, opened


def _mean_residence_s(requests: list[dict]) -> float:
    return sum(r["statusMs"] - r["arrivalMs"] for r in requests) / len(requests) / 1000


def protocol_key(unit) -> dict:
    """Deliverable 2: the closed loop's rate, then both loops' tails and attainment."""
    measure = _measure(unit)
    d2 = SETUP.D2
    slo = measure.Slo(ttft_ms=d2["slo_ttft_ms"], tpot_ms=d2["slo_tpot_ms"])
    rate, closed, opened = _protocol_runs(unit)
    little = measure.little(opened, d2["little_start_ms"], d2["little_end_ms"])
    return {
        "rate": rate,
        "loops": {
            "closed": _load_summary(measure, closed, slo),
            "open": _load_summary(measure, opened, slo),
        },
        "little": asdict(little),
    }


def sweep_key(unit) -> dict:
    """Deliverable 3: each tier's operating point and the cheapest feasible tier, at the
    notebook's target and at its stricter one."""
    measure = _measure(unit)
    d3 = SETUP.D3
    slo = measure.Slo(ttft_ms=d3["slo_ttft_ms"], tpot_ms=d3["slo_tpot_ms"])
    sizes = _trace(unit, d3["trace"])
    tiers = [_tier(unit, f"tiers/{name}.json") for name in d3["tiers"]]
    attainment: dict[str, dict[float, tuple[float, float]]] = {}
    for tier in tiers:
        attainment[tier.name] = {}
        for load in d3["loads"]:
            trace = open_loop(sizes, load, d3["requests"], d3["seed"])
            requests = _tier_run(unit, tier, trace=trace)
            end = math.nextafter(max(r["statusMs"] for r in requests), math.inf)

            def passes(request, tier=tier):
                return measure.quality_passes(request["id"], tier.name, tier.quality_pass_rate)

            report = measure.goodput(requests, slo, 0.0, end, passes=passes)
            attainment[tier.name][load] = (report.attainment_over_submitted, report.goodput_per_s)
    return {
        label: _choice(tiers, attainment, target)
        for label, target in (("target", d3["target"]), ("strict", d3["strict_target"]))
    }


def _choice(tiers, attainment, target: float) -> dict:
    points, best, best_cost = {}, None, math.inf
    for tier in tiers:
        feasible = [load for load, (att, _) in attainment[tier.name].items() if att >= target]
        if not feasible:
            points[tier.name] = None
            continue
        load = max(feasible)
        goodput = attainment[tier.name][load][1]
        cost = tier.price_per_hour / (goodput * 3600) * 1000
        points[tier.name] = {"load": load, "goodput_per_s": goodput, "cost_per_1000": cost}
        if cost < best_cost:
            best, best_cost = tier.name, cost
    return {"points": points, "cheapest": best}


KEYS = {"goodput": goodput_key, "protocol": protocol_key, "sweep": sweep_key}
