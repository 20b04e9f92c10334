"""Unit 08's lesson runs: every case the page talks about, run now by the reference solution.

Loaded by path from ``site_context.py`` (see docs/units.md, "Site"). The device is the one in
unit.yaml; a construction changes only the capacity it names (K, M), so a change to a timing
constant in unit.yaml moves every figure except the tier sweep, whose tiers carry their own
device (the lab's ``tiers/*.json``, exactly what a student's ``sweep.py`` runs). Each run is
made once per build (``Runs`` keeps them by key).
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field

from servesim.arrivals import ClosedLoop
from servesim.load import open_loop
from servesim.metrics import percentile
from servesim.tiers import TierError, load_tier

from grader import reference
from grader.sitebuild.claims import BuildError
from grader.sitebuild.plugins import load_module
from grader.sitebuild.runs import PolicyRun, device
from grader.units import Unit

BATCH_K = 2  # the chapter's two slots for static vs continuous
POOL = {"max_active": 16, "kv_pages": 256}  # a small pool the burst overflows
LOOP_DEVICE = {"max_active": 32, "kv_pages": 2048}  # the small tiers' capacity
LOOP = {"users": 32, "think_ms": 5000.0, "requests": 200, "seed": 1}
SWEEP = {"loads": (1, 2, 3, 4, 5, 6), "requests": 150, "seed": 1}
SLO = {"ttft_ms": 2000.0, "tpot_ms": 80.0}
TARGET = 0.9
SIZES = "azure-conv-slice"


def default_budget(unit: Unit, policy: str) -> int:
    return default_params(unit, policy, "budget")["budget"]


def default_params(unit: Unit, policy: str, *names: str) -> dict[str, int]:
    """The defaults unit.yaml gives ``policy``'s parameters ``names`` (what simulate.py runs)."""
    spec = next((p for p in unit.policies if p["name"] == policy), None)
    if spec is None or not set(names) <= set(spec["params"]):
        raise BuildError(f"unit {unit.id}: no policy {policy!r} with {names} in unit.yaml")
    return {name: int(spec["params"][name]["default"]) for name in names}


@dataclass
class Runs:
    """The unit, its reference measure.py, and every run made so far (by key)."""

    unit: Unit
    cache: dict = field(default_factory=dict)

    @property
    def measure(self):
        return load_module(self.unit.solutions_dir / "measure.py")

    def run(self, key: tuple, make) -> PolicyRun:
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]

    def policy(self, trace, policy: str, params: dict, dev, label: str, **extra) -> PolicyRun:
        key = (label, policy, json.dumps(params, sort_keys=True), repr(dev))
        return self.run(
            key,
            lambda: PolicyRun(
                label, reference.run_reference(self.unit, trace, policy, params, dev, **extra)
            ),
        )


def batching(runs: Runs) -> dict[str, PolicyRun]:
    """static and continuous on the chapter's three requests, K = 2, the unit's timing."""
    trace = reference.load_trace(runs.unit, "static-vs-continuous")
    dev = device(runs.unit, max_active=BATCH_K)
    return {p: runs.policy(trace, p, {}, dev, p) for p in ("static", "continuous")}


def caches(run: dict):
    """Each event with every holder's KV cache (positions) after it, from the events alone.

    A holder's cache is its prefilled tokens plus one per decode; a preempted one drops it at
    the start of the step; a request that left (completed, cancelled) at a step's end frees it.
    The dict is the same object each time: copy it to keep a step's state.
    """
    left = {r["id"]: r["statusMs"] for r in run["requests"] if r["status"] != "rejected"}
    cache: dict[str, int] = {}
    for event in run["events"]:
        for rid in event["preempt"]:
            cache.pop(rid, None)
        for chunk in event["prefill"]:
            cache[chunk["id"]] = cache.get(chunk["id"], 0) + chunk["tokens"]
        for rid in event["decode"]:
            cache[rid] += 1
        for rid in [r for r in cache if left[r] == event["endMs"]]:
            del cache[rid]
        yield event, cache


def pages_over_time(run: dict, page_tokens: int) -> list[tuple[float, int]]:
    """(step end, KV pages held after the step) rebuilt from the run's events alone."""
    points = [(0.0, 0)]
    for event, cache in caches(run):
        points.append((event["endMs"], sum(math.ceil(c / page_tokens) for c in cache.values())))
    return points


def kv_pool(runs: Runs) -> dict:
    """budgeted vs paged on the burst, on a pool the burst overflows."""
    trace = reference.load_trace(runs.unit, "burst")
    dev = device(runs.unit, **POOL)
    out = {"device": dev.to_json(), "runs": {}, "pages": {}, "preempts": {}}
    for policy in ("budgeted", "paged"):
        budget = default_budget(runs.unit, policy)
        run = runs.policy(trace, policy, {"budget": budget}, dev, policy)
        out["runs"][policy] = run
        out["pages"][policy] = pages_over_time(run.run, dev.page_tokens)
        out["preempts"][policy] = [(e["startMs"], rid) for e in run.events for rid in e["preempt"]]
    return out


LIFO = {"trace": "lifo-victim", "device": "kv-64-pages", "budget": 64}


def lab_device(unit: Unit, name: str):
    """A device profile of the lab's ``devices/`` folder (what a student passes)."""
    doc = json.loads((unit.lab_dir / "devices" / f"{name}.json").read_text(encoding="utf-8"))
    return reference.engine(unit).DeviceProfile.from_json(doc["device"], source=name)


def caches_before(run: dict, index: int) -> dict[str, int]:
    """Positions in each holder's KV cache when event ``index`` starts."""
    cache: dict[str, int] = {}
    for event, after in caches(run):
        if event["index"] == index:
            break
        cache = dict(after)
    return cache


def lifo_victim(runs: Runs) -> dict:
    """budgeted and paged on the lab's ``lifo-victim`` construction (B = 64, 64 pages), and
    the step in which paged throws away the partial prefill of L: each holder's pages before
    it, the pages left, and the pages L's next chunk needed."""
    unit = runs.unit
    trace = reference.load_trace(unit, LIFO["trace"])
    dev = lab_device(unit, LIFO["device"])
    params = {"budget": LIFO["budget"]}
    out = {"device": dev.to_json(), "budget": LIFO["budget"], "runs": {}}
    out["rows"] = {}
    for policy in ("budgeted", "paged"):
        made = out["runs"][policy] = runs.policy(trace, policy, params, dev, f"lifo-{policy}")
        starts = [e["startMs"] for e in made.events for c in e["prefill"] if c["id"] == "L"]
        out["rows"][policy] = {
            "start": starts[0],
            "preemptions": made.summary["recomputes"],
            "recomputed": made.summary["recomputedTokens"],
            "first": made.req["L"]["firstTokenMs"],
            "finish": {rid: made.req[rid]["finishMs"] for rid in made.req},
        }
    run = out["runs"]["paged"].run
    steps = [e for e in run["events"] if e["preempt"]]
    if len(steps) != 1 or steps[0]["preempt"] != ["L"]:
        raise BuildError(f"unit {unit.id}: lifo-victim must preempt L once, got {steps}")
    step = steps[0]
    cache = caches_before(run, step["index"])
    prompt = next(r["inputTokens"] for r in run["requests"] if r["id"] == "L")
    # what L asked for: its next chunk, from the budget the decodes walked before it left
    chunk = min(prompt - cache["L"], LIFO["budget"] - len(step["decode"]))
    held = {rid: dev.pages_for(c) for rid, c in cache.items()}
    # the pages free for L when it started: after what the step gave the holders before it
    first = next(e for e in run["events"] if any(c["id"] == "L" for c in e["prefill"]))
    grown = caches_before(run, first["index"])
    for rid in first["decode"]:
        grown[rid] += 1
    for c in first["prefill"]:
        if c["id"] != "L":
            grown[c["id"]] = grown.get(c["id"], 0) + c["tokens"]
    out["start"] = {
        "startMs": first["startMs"],
        "free": dev.kv_pages - sum(dev.pages_for(c) for c in grown.values()),
        "needs": dev.pages_for(prompt),
    }
    out["step"] = {
        "index": step["index"],
        "startMs": step["startMs"],
        "cache": cache,
        "pages": held,
        "free": dev.kv_pages - sum(held.values()),
        "chunk": chunk,
        "chunkPages": dev.pages_for(cache["L"] + chunk) - held["L"],
    }
    return out


TIMED = {"trace": "azure-conv-slice", "device": "long-context"}


def timed_vs_budgeted(runs: Runs) -> dict:
    """budgeted (token budget B) and timed (target step time, minimum prefill share), each with
    the lab's default parameters, on the Azure conversation slice under the long-context device
    (31.3's context terms): every step's duration, the longest step of each second, and each
    one's ITL and TTFT percentiles over every request."""
    unit = runs.unit
    trace = reference.load_trace(unit, TIMED["trace"])
    dev = lab_device(unit, TIMED["device"])
    params = {
        "budgeted": default_params(unit, "budgeted", "budget"),
        "timed": default_params(unit, "timed", "target", "share"),
    }
    target = params["timed"]["target"]
    out = {"device": dev.to_json(), "params": params, "target": target, "runs": {}, "rows": {}}
    out["seconds"] = {}
    for policy, chosen in params.items():
        made = out["runs"][policy] = runs.policy(trace, policy, chosen, dev, f"long-{policy}")
        requests = made.run["requests"]
        if any(r["status"] != "completed" for r in requests):
            raise BuildError(f"unit {unit.id}: {policy} left requests of {TIMED['trace']} undone")
        steps = [e["endMs"] - e["startMs"] for e in made.events]
        itl = [b - a for r in requests for a, b in itertools.pairwise(r["tokenTimesMs"])]
        ttft = [r["ttftMs"] for r in requests]
        out["rows"][policy] = {
            "steps": len(steps),
            "over": sum(took > target for took in steps),
            "maxStep": max(steps),
            **{f"p{p}Itl": percentile(itl, p) for p in (50, 99)},
            **{f"p{p}Ttft": percentile(ttft, p) for p in (50, 99)},
        }
        longest: dict[int, float] = {}
        for event, took in zip(made.events, steps):
            second = int(event["startMs"] // 1000)
            longest[second] = max(longest.get(second, 0.0), took)
        out["seconds"][policy] = sorted(longest.items())
    return out


def _p99(requests: list[dict]) -> float:
    return percentile([r["ttftMs"] if r["ttftMs"] is not None else math.inf for r in requests], 99)


@dataclass(frozen=True)
class Point:
    tier: str
    load: float
    goodput: object  # measure.Goodput
    rejected: int
    p99_ttft_ms: float


def tiers(runs: Runs) -> list:
    names = tuple(p["name"] for p in runs.unit.policies)
    try:
        return [load_tier(p, names) for p in sorted((runs.unit.lab_dir / "tiers").glob("*.json"))]
    except TierError as exc:
        raise BuildError(f"unit {runs.unit.id}: {exc}") from None


def sweep(runs: Runs) -> dict:
    """Every tier at every offered load (open loop), measured as the lab's sweep.py does."""
    measure = runs.measure
    slo = measure.Slo(**SLO)
    base = reference.load_trace(runs.unit, SIZES)
    points = []
    for tier in tiers(runs):
        for load in SWEEP["loads"]:
            trace = open_loop(base, load, SWEEP["requests"], SWEEP["seed"])
            run = runs.policy(
                trace,
                tier.policy,
                {"budget": tier.budget},
                tier.device,
                f"{tier.name}@{load:g}",
                queue_cap=tier.queue_cap,
            ).run
            requests = run["requests"]
            end = math.nextafter(max(r["statusMs"] for r in requests), math.inf)

            def passes(r, tier=tier):
                return measure.quality_passes(r["id"], tier.name, tier.quality_pass_rate)

            report = measure.goodput(requests, slo, 0.0, end, passes=passes)
            rejected = sum(r["status"] == "rejected" for r in requests)
            points.append(Point(tier.name, load, report, rejected, _p99(requests)))
    return {"tiers": tiers(runs), "points": points}


def operating_points(sweep_result: dict) -> list[dict]:
    """Per tier: the highest load meeting the target, its goodput and cost per 1,000."""
    out = []
    for tier in sweep_result["tiers"]:
        mine = [p for p in sweep_result["points"] if p.tier == tier.name]
        ok = [p for p in mine if p.goodput.attainment_over_submitted >= TARGET]
        best = max(ok, key=lambda p: p.load, default=None)
        cost = None
        if best is not None and best.goodput.goodput_per_s > 0:
            cost = tier.price_per_hour / (best.goodput.goodput_per_s * 3600) * 1000
        out.append({"tier": tier, "point": best, "cost": cost})
    return out


def loops(runs: Runs) -> dict:
    """A closed loop, and an open loop at the closed loop's realised mean rate."""
    base = reference.load_trace(runs.unit, SIZES)
    dev = device(runs.unit, **LOOP_DEVICE)
    params = {"budget": default_budget(runs.unit, "paged")}
    closed_src = ClosedLoop(
        LOOP["users"],
        LOOP["think_ms"],
        LOOP["requests"],
        base,
        seed=LOOP["seed"],
        think="exponential",
    )
    closed = runs.policy(None, "paged", params, dev, "closed", closed=closed_src)
    rate = _rate(closed.run["requests"])
    # one seed, its time axis scaled so the sample's own rate equals the closed loop's
    sample = _rate(open_loop(base, rate, LOOP["requests"], LOOP["seed"]).raw["requests"])
    trace = open_loop(base, rate * rate / sample, LOOP["requests"], LOOP["seed"])
    opened = runs.policy(trace, "paged", params, dev, "open")
    out = {"device": dev.to_json(), "rate": rate, "open_rate": _rate(opened.run["requests"])}
    for name, run in (("closed", closed), ("open", opened)):
        ttfts = [r["ttftMs"] for r in run.run["requests"] if r["ttftMs"] is not None]
        if len(ttfts) != len(run.run["requests"]):
            raise BuildError(f"unit {runs.unit.id}: the {name} loop lost requests")
        out[name] = {"run": run, **{f"p{p}": percentile(ttfts, p) for p in (50, 90, 99)}}
    return out


def _rate(requests: list[dict]) -> float:
    """Requests per second: how many arrived over the time of the last arrival."""
    return len(requests) / (max(r["arrivalMs"] for r in requests) / 1000)
