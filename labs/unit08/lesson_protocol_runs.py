"""Unit 08's protocol runs as the lesson reads them: the tier sweep judged as sweep.py judges
it, the single short run and the answer it once gave, closed vs open loop, and the length
buckets. Their results come from the cache (``lesson_cache.py``); the jobs that make them are
in ``lesson_jobs.py``.
"""

from __future__ import annotations

import math
from pathlib import Path

from servesim.protocol import load_protocol
from servesim.tiers import TierError, load_tier

from grader.plugins import load_file
from grader.sitebuild.claims import BuildError
from grader.units import Unit

HERE = Path(__file__).resolve().parent
cache = load_file(HERE / "lesson_cache.py")
lesson_jobs = load_file(HERE / "lesson_jobs.py")


def tiers(unit: Unit) -> list:
    names = tuple(p["name"] for p in unit.policies)
    try:
        return [load_tier(p, names) for p in lesson_jobs.tier_paths(unit)]
    except TierError as exc:
        raise BuildError(f"unit {unit.id}: {exc}") from None


def buckets(unit: Unit) -> dict:
    """The bucket and window sweep with its settings (cached section 'buckets')."""
    return {
        "settings": {
            **lesson_jobs.BUCKETS,
            "buckets": list(lesson_jobs.BUCKETS["buckets"]),
            "waits": list(lesson_jobs.BUCKETS["waits"]),
        },
        "rows": cache.cached(unit, "buckets"),
    }


def sweep(unit: Unit) -> dict:
    """Every tier at every load of the lesson's protocol, judged as sweep.py judges it."""
    protocol = load_protocol(unit.lab_dir / lesson_jobs.PROTOCOL)
    ex, measure = lesson_jobs.experiment(unit), lesson_jobs.solution_measure(unit)
    cells = ex.judge(protocol, cache.cached(unit, "sweep"), measure)
    all_tiers = tiers(unit)
    points = ex.operating_points(all_tiers, cells)
    return {
        "protocol": protocol,
        "tiers": all_tiers,
        "cells": cells,
        "points": points,
        "choice": ex.cheapest(all_tiers, cells, points),
    }


def short(unit: Unit, sweep_result: dict) -> dict:
    """The single short run per tier and load, and the answer it gave (the lab's old one):
    a tier is "feasible" where that one run's attainment reaches the target."""
    protocol = sweep_result["protocol"]
    rows = cache.cached(unit, "short")
    best, best_cost, ops = None, math.inf, {}
    for tier in sweep_result["tiers"]:
        mine = [r for r in rows if r["tier"] == tier.name]
        ok = [r for r in mine if r["attainment"] >= protocol.attainment_target]
        top = max(ok, key=lambda r: r["load"], default=None)
        ops[tier.name] = top
        if top and top["goodput"] > 0:
            cost = tier.price_per_hour / (top["goodput"] * 3600) * 1000
            if cost < best_cost:
                best, best_cost = tier.name, cost
    return {"rows": rows, "ops": ops, "cheapest": best, "cost": best_cost}


def loops(unit: Unit) -> dict:
    """The closed loop of LOOPS over its replications, then an open loop (Poisson) at the
    closed loop's mean realised rate, with the same seeds, on the same tier."""
    closed = load_protocol(unit.lab_dir / lesson_jobs.LOOPS["protocol"])
    names = tuple(p["name"] for p in unit.policies)
    tier = load_tier(unit.lab_dir / lesson_jobs.LOOPS["tier"], names)
    return {**cache.cached(unit, "loops"), "protocol": closed, "tier": tier}
