"""Unit 08's construction runs, made at every build by the reference solution.

Each construction runs on the device of unit.yaml, changing only the capacity it names (K or
M), or on a device profile of the lab's ``devices/`` folder: static vs continuous on the
chapter's three requests, budgeted vs paged on the public ``burst`` trace (its claims also
checked on other draws of the same generator, ``BURST_SEEDS``), the LIFO victim, the time
budget against the token budget, and section 31.7's worked example of goodput.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path

import servesim
from servesim.metrics import percentile
from servesim.trace import parse_trace

from grader import reference
from grader.plugins import load_file
from grader.sitebuild.claims import BuildError
from grader.sitebuild.runs import PolicyRun, device
from grader.units import Unit

HERE = Path(__file__).resolve().parent
public_traces = load_file(HERE / "public_traces.py")
events = load_file(HERE / "lesson_events.py")

BATCH_K = 2  # the chapter's two slots for static vs continuous


POOL = {"max_active": 16, "kv_pages": 256}  # a small pool the burst overflows
POOL_FILE = "pool-256"  # the lab's device file of that pool (what the page tells students to pass)


BURST_SEEDS = tuple(range(1, 11))  # other draws of the burst generator (the public trace: 8)


LIFO = {"trace": "lifo-victim", "device": "kv-64-pages", "budget": 64}


TIMED = {"trace": "azure-conv-slice", "device": "long-context"}


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
    """The unit and every construction run made so far (by key)."""

    unit: Unit
    cache: dict = field(default_factory=dict)

    def policy(self, trace, policy: str, params: dict, dev, label: str, **extra) -> PolicyRun:
        key = (label, trace.name, policy, json.dumps(params, sort_keys=True), repr(dev))
        if key not in self.cache:
            run = reference.run_reference(self.unit, trace, policy, params, dev, **extra)
            self.cache[key] = PolicyRun(label, run)
        return self.cache[key]


def batching(runs: Runs) -> dict[str, PolicyRun]:
    """static and continuous on the chapter's three requests, K = 2, the unit's timing."""
    trace = reference.load_trace(runs.unit, "static-vs-continuous")
    dev = device(runs.unit, max_active=BATCH_K)
    return {p: runs.policy(trace, p, {}, dev, p) for p in ("static", "continuous")}


def _pool_run(runs: Runs, trace, policy: str, dev) -> dict:
    run = runs.policy(trace, policy, {"budget": default_budget(runs.unit, policy)}, dev, policy)
    pages = events.pages_over_time(run.run, dev.page_tokens)
    preempts = [(e["startMs"], rid) for e in run.events for rid in e["preempt"]]
    return {"run": run, "pages": pages, "preempts": preempts, "peak": max(p for _, p in pages)}


def kv_pool(runs: Runs) -> dict:
    """budgeted vs paged on the burst, on a pool the burst overflows; and the same pair on
    other draws of the burst generator (``draws``: one dict per seed)."""
    dev = lab_device(runs.unit, POOL_FILE)
    if (dev.max_active, dev.kv_pages) != (POOL["max_active"], POOL["kv_pages"]):
        raise BuildError(f"devices/{POOL_FILE}.json is not the pool {POOL} the lesson describes")
    trace = reference.load_trace(runs.unit, "burst")
    shown = {p: _pool_run(runs, trace, p, dev) for p in ("budgeted", "paged")}
    draws = []
    for seed in BURST_SEEDS:
        doc = public_traces.burst(seed)
        drawn = parse_trace({**doc, "name": f"burst-seed-{seed}"}, source=f"burst seed {seed}")
        draws.append({p: _pool_run(runs, drawn, p, dev) for p in ("budgeted", "paged")})
    return {
        "device": dev.to_json(),
        "device_file": f"devices/{POOL_FILE}.json",
        "runs": {p: shown[p]["run"] for p in shown},
        "pages": {p: shown[p]["pages"] for p in shown},
        "preempts": {p: shown[p]["preempts"] for p in shown},
        "victims": events.victim_phases(shown["paged"]["run"].run),
        "draws": draws,
    }


def chapter_example(measure):
    """Section 31.7's example measured by ``measure.goodput``: 1,000 requests submitted over
    100 s, 100 rejected, 50 failed (cancelled), 850 succeeded (completed), 700 of them within
    every target (30 fail the quality check, 120 the TTFT target)."""
    requests, bad_quality = [], set()
    for i in range(1000):
        arrival, rid = i * 100.0, f"r{i:04d}"
        record = {"id": rid, "arrivalMs": arrival, "status": "completed", "tpotMs": None}
        if i < 100:
            record |= {"status": "rejected", "statusMs": arrival, "ttftMs": None}
        elif i < 150:
            record |= {"status": "cancelled", "statusMs": arrival + 900, "ttftMs": None}
        else:
            ttft = 800.0 if i >= 880 else 100.0
            record |= {"statusMs": arrival + ttft, "ttftMs": ttft}
            if i < 180:
                bad_quality.add(rid)
        requests.append(record)
    slo = measure.Slo(ttft_ms=500.0)
    return measure.goodput(requests, slo, 0.0, 100_000.0, lambda r: r["id"] not in bad_quality)


def lab_device(unit: Unit, name: str):
    """A device profile of the lab's ``devices/`` folder (what a student passes)."""
    doc = json.loads((unit.lab_dir / "devices" / f"{name}.json").read_text(encoding="utf-8"))
    return servesim.DeviceProfile.from_json(doc["device"], source=name)


def lifo_victim(runs: Runs) -> dict:
    """budgeted and paged on the lab's ``lifo-victim`` construction (B = 64, 64 pages), and
    the step in which paged throws away the partial prefill of L: each holder's pages before
    it, the pages left, and the pages L's next chunk needed."""
    unit = runs.unit
    trace = reference.load_trace(unit, LIFO["trace"])
    dev = lab_device(unit, LIFO["device"])
    params = {"budget": LIFO["budget"]}
    out = {"device": dev.to_json(), "budget": LIFO["budget"], "runs": {}}
    out["device_file"] = f"devices/{LIFO['device']}.json"
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
    out["events"] = run["events"]  # for the page's who-does-what claims
    out["chunks"] = {  # each request's prefill chunks under paged: (start ms, end ms, tokens)
        rid: [(e["startMs"], e["endMs"], c["tokens"]) for e in run["events"] for c in e["prefill"]
              if c["id"] == rid]
        for rid in ("A", "B")
    }  # fmt: skip
    steps = [e for e in run["events"] if e["preempt"]]
    if len(steps) != 1 or steps[0]["preempt"] != ["L"]:
        raise BuildError(f"unit {unit.id}: lifo-victim must preempt L once, got {steps}")
    step = steps[0]
    restart = next(
        e["startMs"]
        for e in run["events"][step["index"] + 1 :]
        if any(c["id"] == "L" for c in e["prefill"])
    )
    cache = events.caches_before(run, step["index"])
    prompt = next(r["inputTokens"] for r in run["requests"] if r["id"] == "L")
    # what L asked for: its next chunk, from the budget the decodes walked before it left
    chunk = min(prompt - cache["L"], LIFO["budget"] - len(step["decode"]))
    held = {rid: dev.pages_for(c) for rid, c in cache.items()}
    # the pages free for L when it started: after what the step gave the holders before it
    first = next(e for e in run["events"] if any(c["id"] == "L" for c in e["prefill"]))
    grown = events.caches_before(run, first["index"])
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
        "restartMs": restart,  # the start of L's first chunk after it was thrown out
        # the other holders that had left by then, and those still running
        "doneBefore": [
            r["id"] for r in run["requests"] if r["id"] != "L" and r["statusMs"] <= restart
        ],
        "running": [r["id"] for r in run["requests"] if r["id"] != "L" and r["statusMs"] > restart],
        "cache": cache,
        "pages": held,
        "free": dev.kv_pages - sum(held.values()),
        "chunk": chunk,
        "chunkPages": dev.pages_for(cache["L"] + chunk) - held["L"],
    }
    return out


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
