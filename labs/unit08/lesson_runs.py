"""Unit 08's lesson runs: every case the page talks about, run now by the reference solution.

Loaded by path from ``site_context.py`` (see docs/units.md, "Site"). Two kinds of runs:

- constructions, made at every build on the device of unit.yaml (a construction changes only
  the capacity it names, K or M): static vs continuous on the chapter's three requests, and
  budgeted vs paged on the public ``burst`` trace, whose claims are also checked on other draws
  of the same generator (``BURST_SEEDS``);
- protocol runs, made by the lab's own ``experiment.py`` with the reference solution, exactly
  what a student's ``sweep.py --protocol`` runs: the tier sweep of ``protocols/lesson.json``,
  the short single-seed sweep the lesson warns about, and closed vs open loop
  (``protocols/closed-loop.json``). They take minutes, so their results are kept in
  ``lesson_cache.json`` under a key hashed from every input (the engine, the solution,
  experiment.py, this file, the protocol, tier and trace files); when the key does not match,
  the build makes them again (and says so), and ``python labs/unit08/lesson_runs.py`` writes
  them back. CI builds the site from a fresh clone, where the committed cache is what it uses.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import math
import os
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

from servesim.metrics import percentile
from servesim.protocol import load_protocol, parse_protocol
from servesim.runfile import write_atomic
from servesim.tiers import TierError, load_tier
from servesim.trace import parse_trace

from grader import reference
from grader.plugins import load_file
from grader.sitebuild.claims import BuildError
from grader.sitebuild.runs import PolicyRun, device
from grader.units import CODE_ROOT, Unit

HERE = Path(__file__).resolve().parent
CACHE = HERE / "lesson_cache.json"
public_traces = load_file(HERE / "public_traces.py")
lesson_calibrated = load_file(HERE / "lesson_calibrated.py")

BATCH_K = 2  # the chapter's two slots for static vs continuous
POOL = {"max_active": 16, "kv_pages": 256}  # a small pool the burst overflows
BURST_SEEDS = tuple(range(1, 11))  # other draws of the burst generator (the public trace: 8)
PROTOCOL = "protocols/lesson.json"
LOOPS = {"protocol": "protocols/closed-loop.json", "tier": "tiers/small-paged.json"}
SHORT = {"requests": 300, "seed": 1}  # the single short run the lab once answered with


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


def _pool_run(runs: Runs, trace, policy: str, dev) -> dict:
    run = runs.policy(trace, policy, {"budget": default_budget(runs.unit, policy)}, dev, policy)
    pages = pages_over_time(run.run, dev.page_tokens)
    preempts = [(e["startMs"], rid) for e in run.events for rid in e["preempt"]]
    return {"run": run, "pages": pages, "preempts": preempts, "peak": max(p for _, p in pages)}


def victim_phases(run: dict) -> dict[str, int]:
    """How many preemptions of ``run`` threw out a request that was decoding (its last step
    before the preemption gave it a decode token) and how many one still in (re)prefill."""
    last: dict[str, str] = {}
    counts = {"decoding": 0, "prefilling": 0}
    for event in run["events"]:
        for rid in event["preempt"]:
            counts["decoding" if last.get(rid) == "decode" else "prefilling"] += 1
        for chunk in event["prefill"]:
            last[chunk["id"]] = "prefill"
        for rid in event["decode"]:
            last[rid] = "decode"
    return counts


def kv_pool(runs: Runs) -> dict:
    """budgeted vs paged on the burst, on a pool the burst overflows; and the same pair on
    other draws of the burst generator (``draws``: one dict per seed)."""
    dev = device(runs.unit, **POOL)
    trace = reference.load_trace(runs.unit, "burst")
    shown = {p: _pool_run(runs, trace, p, dev) for p in ("budgeted", "paged")}
    draws = []
    for seed in BURST_SEEDS:
        doc = public_traces.burst(seed)
        drawn = parse_trace({**doc, "name": f"burst-seed-{seed}"}, source=f"burst seed {seed}")
        draws.append({p: _pool_run(runs, drawn, p, dev) for p in ("budgeted", "paged")})
    return {
        "device": dev.to_json(),
        "runs": {p: shown[p]["run"] for p in shown},
        "pages": {p: shown[p]["pages"] for p in shown},
        "preempts": {p: shown[p]["preempts"] for p in shown},
        "victims": victim_phases(shown["paged"]["run"].run),
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
    restart = next(
        e["startMs"]
        for e in run["events"][step["index"] + 1 :]
        if any(c["id"] == "L" for c in e["prefill"])
    )
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


# -- protocol runs (cached) -------------------------------------------------------------------


# Length buckets and the wait window (31.2): static batching on the Azure slice's sizes, arriving
# slowly enough (Poisson) that a window has requests to wait for; one run per (bucket, window).
BUCKETS = {
    "trace": "azure-conv-slice",
    "rate": 0.2,  # requests per second
    "requests": 200,
    "seed": 1,
    "max_active": 16,
    "buckets": (0, 256),  # 0: one bucket
    "waits": (0, 1000, 2000, 4000, 8000),  # ms
}


def padding_share(run: dict) -> float:
    """The share of padded prompt positions over every prefill step, were each step padded to its
    longest prompt (1 - sum P / (n P_max) summed over steps: equation 31.3's linear ratio)."""
    size = {r["id"]: r["inputTokens"] for r in run["requests"]}
    used = padded = 0
    for event in run["events"]:
        prompts = [size[c["id"]] for c in event["prefill"]]
        if prompts:
            used, padded = used + sum(prompts), padded + len(prompts) * max(prompts)
    return 1 - used / padded if padded else 0.0


def buckets_job(unit: Unit, settings: dict) -> list[dict]:
    """One row per (bucket, wait window): padding share, TTFT, groups launched."""
    from servesim.load import open_loop

    sizes = reference.load_trace(unit, settings["trace"])
    trace = open_loop(sizes, settings["rate"], settings["requests"], settings["seed"])
    dev = device(unit, max_active=settings["max_active"])
    rows = []
    for bucket, wait in itertools.product(settings["buckets"], settings["waits"]):
        params = {"bucket": bucket, "wait_ms": wait}
        run = reference.run_reference(unit, trace, "static", params, dev)
        ttfts = [r["ttftMs"] for r in run["requests"] if r["ttftMs"] is not None]
        groups = [len(e["prefill"]) for e in run["events"] if e["prefill"]]
        rows.append(
            {
                "bucket": bucket,
                "waitMs": wait,
                "padding": padding_share(run),
                "ttftMeanMs": statistics.fmean(ttfts),
                "ttftP90Ms": percentile(ttfts, 90),
                "served": len(ttfts),
                "groups": len(groups),
                "meanGroup": statistics.fmean(groups),
            }
        )
    return rows


def buckets(unit: Unit) -> dict:
    """The bucket and window sweep with its settings (cached section 'buckets')."""
    return {
        "settings": {
            **BUCKETS,
            "buckets": list(BUCKETS["buckets"]),
            "waits": list(BUCKETS["waits"]),
        },
        "rows": cached(unit, "buckets"),
    }


def experiment(unit: Unit):
    """The lab folder's experiment.py (what sweep.py runs)."""
    return load_file(unit.lab_dir / "experiment.py")


def code(unit: Unit):
    """The reference solution, as experiment.py's workers load it (private module names)."""
    tag = hashlib.sha256(str(unit.solutions_dir).encode()).hexdigest()[:10]
    return experiment(unit).Code(
        (f"_infralab_lesson_{tag}_policies", str(unit.solutions_dir / "policies.py")),
        (f"_infralab_lesson_{tag}_measure", str(unit.solutions_dir / "measure.py")),
        str(unit.lab_dir),
    )


def solution_measure(unit: Unit):
    return experiment(unit).module(*code(unit).measure)


def workers() -> int:
    """Processes for protocol runs: every core where workers fork (Linux), else one."""
    return (os.cpu_count() or 1) if sys.platform == "linux" else 1


def tier_paths(unit: Unit) -> list[Path]:
    return sorted((unit.lab_dir / "tiers").glob("*.json"))


def tiers(unit: Unit) -> list:
    names = tuple(p["name"] for p in unit.policies)
    try:
        return [load_tier(p, names) for p in tier_paths(unit)]
    except TierError as exc:
        raise BuildError(f"unit {unit.id}: {exc}") from None


VIEWER = "runview"


def _inputs(unit: Unit, lab_files, code=()) -> dict[str, bytes]:
    """Everything a protocol section's results depend on, by a location-free label: the
    engine, the solution, the lab's experiment.py and lab.json, the section's own lab files
    (protocol, tiers, trace) and the source of this file's functions it runs (``code``)."""
    engine = CODE_ROOT / "servesim"
    paths = {
        f"servesim/{p.relative_to(engine)}": p
        for p in sorted(engine.rglob("*.py"))
        if VIEWER not in p.relative_to(engine).parts  # draws run files, never makes them
    }
    paths |= {f"solutions/{n}": unit.solutions_dir / n for n in ("policies.py", "measure.py")}
    for name in ("experiment.py", "lab.json", *lab_files):
        paths[f"lab/{name}"] = unit.lab_dir / name
    inputs = {label: path.read_bytes() for label, path in paths.items()}
    for item in code:
        source = inspect.getsource(item) if callable(item) else repr(item)
        inputs[f"lesson_runs/{getattr(item, '__name__', source)}"] = source.encode()
    return inputs


def input_key(inputs: dict[str, bytes]) -> str:
    digest = hashlib.sha256()
    for label in sorted(inputs):
        digest.update(label.encode() + b"\0" + inputs[label] + b"\0")
    return digest.hexdigest()


def _read_cache() -> dict:
    try:
        return json.loads(CACHE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def sections(unit: Unit) -> dict:
    """Each cached section: (its input files, the function that makes its results)."""
    protocol = load_protocol(unit.lab_dir / PROTOCOL)
    closed = load_protocol(unit.lab_dir / LOOPS["protocol"])
    paths = [str(p) for p in tier_paths(unit)]
    sweep_files = [
        PROTOCOL,
        f"traces/{protocol.sizes}.json",
        *(f"tiers/{Path(p).name}" for p in paths),
    ]
    loop_files = [LOOPS["protocol"], LOOPS["tier"], f"traces/{closed.sizes}.json"]
    ex, solution = experiment(unit), code(unit)

    def make_sweep():
        return ex.run_protocol(protocol, paths, solution, workers(), _progress)

    def make_short():
        jobs = ex.jobs_of(short_protocol(protocol), paths, solution)
        jobs = [j for j in jobs if j.seed == SHORT["seed"]]
        return ex.run_jobs(jobs, workers(), _progress, short_job)

    def make_loops():
        tier = [str(unit.lab_dir / LOOPS["tier"])]
        closed_rows = ex.run_jobs(ex.jobs_of(closed, tier, solution), workers(), None, loops_job)
        rate = round(statistics.fmean(r["rate"] for r in closed_rows), 3)
        opened = open_protocol(closed, rate)
        open_rows = ex.run_jobs(ex.jobs_of(opened, tier, solution), workers(), None, loops_job)
        return {"rate": rate, "closed": closed_rows, "open": open_rows}

    return {
        "sweep": (_inputs(unit, sweep_files), make_sweep),
        "short": (
            _inputs(unit, sweep_files, (short_job, legacy_passes, short_protocol, SHORT)),
            make_short,
        ),
        "loops": (_inputs(unit, loop_files, (loops_job, open_protocol, LOOPS)), make_loops),
        "buckets": (
            _inputs(
                unit, [f"traces/{BUCKETS['trace']}.json"], (buckets_job, padding_share, BUCKETS)
            ),
            lambda: buckets_job(unit, BUCKETS),
        ),
        "calibrated": lesson_calibrated.section(unit, sys.modules[__name__], sweep_files),
    }


def cached(unit: Unit, name: str):
    """A section's results, from the cache when its key matches its inputs, else made now."""
    files, make = sections(unit)[name]
    entry = _read_cache().get(name)
    if entry and entry.get("key") == input_key(files):
        return entry["data"]
    print(
        f"note: unit {unit.id}: lesson runs '{name}' are not in the cache for these inputs; "
        "making them now (minutes); `python labs/unit08/lesson_runs.py` stores them",
        file=sys.stderr,
    )
    return make()


def stale_sections(unit: Unit) -> list[str]:
    """The cached sections whose key no longer matches their inputs (or that are missing)."""
    doc = _read_cache()
    return [
        name
        for name, (files, _) in sections(unit).items()
        if doc.get(name, {}).get("key") != input_key(files)
    ]


def sweep(unit: Unit) -> dict:
    """Every tier at every load of the lesson's protocol, judged as sweep.py judges it."""
    protocol = load_protocol(unit.lab_dir / PROTOCOL)
    ex, measure = experiment(unit), solution_measure(unit)
    cells = ex.judge(protocol, cached(unit, "sweep"), measure)
    all_tiers = tiers(unit)
    points = ex.operating_points(all_tiers, cells)
    return {
        "protocol": protocol,
        "tiers": all_tiers,
        "cells": cells,
        "points": points,
        "choice": ex.cheapest(all_tiers, cells, points),
    }


def legacy_passes(request_id: str, tier: str, pass_rate: float) -> bool:
    """The quality draw the lab used before replications: tier and id only, no seed."""
    digest = hashlib.sha256(f"{tier}/{request_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < pass_rate


def experiment_of(job):
    return load_file(Path(job.code.lab_dir) / "experiment.py")


def short_job(job) -> dict:
    """One short run measured the old way: from time 0 to the last departure, quality drawn
    by tier and id alone, one seed (and, beside it, the seeded draw's pass share)."""
    ex = experiment_of(job)
    tier, protocol, requests = ex.simulate_job(job)
    measure = ex.module(*job.code.measure)
    slo = measure.Slo(ttft_ms=protocol.slo_ttft_ms, tpot_ms=protocol.slo_tpot_ms)
    end = max(r["statusMs"] for r in requests)  # (the old window): 0 to the last departure
    done = [r for r in requests if r["status"] == "completed"]
    old = [r for r in done if legacy_passes(r["id"], tier.name, tier.quality_pass_rate)]
    qualifying = sum(1 for r in old if measure.meets_slo(r, slo))
    seeded = sum(
        measure.quality_passes(r["id"], tier.name, tier.quality_pass_rate, job.seed) for r in done
    )
    return {
        "tier": tier.name,
        "load": job.load,
        "attainment": qualifying / len(requests),
        "goodput": qualifying / (end / 1000),
        "legacy_quality": len(old) / len(done) if done else None,
        "seeded_quality": seeded / len(done) if done else None,
    }


def short_protocol(protocol):
    """The lesson's protocol cut down to the lab's old single run: SHORT requests, no warm-up
    (two seeds, as a protocol needs; only the first runs)."""
    doc = protocol.to_json() | {
        "name": f"{protocol.name}-short",
        "requestsPerRun": SHORT["requests"],
        "warmupRequests": 0,
        "cooldownRequests": 1,
        "seeds": [SHORT["seed"], SHORT["seed"] + 1],
    }
    return parse_protocol(doc, "the short protocol")


def short(unit: Unit, sweep_result: dict) -> dict:
    """The single short run per tier and load, and the answer it gave (the lab's old one):
    a tier is "feasible" where that one run's attainment reaches the target."""
    protocol = sweep_result["protocol"]
    rows = cached(unit, "short")
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


def loops_job(job) -> dict:
    """One replication of a loop: its window's TTFT percentiles (``p*``: a failed request
    counts as infinitely late, None when that percentile is; ``served_p*``: completed requests
    only), its realised rate, its failures and the protocol's steady-state check (``steady``)."""
    ex = experiment_of(job)
    _, protocol, requests = ex.simulate_job(job)
    window = protocol.window(requests)
    measure = ex.module(*job.code.measure)
    steady = measure.steady_state(
        requests, window.start_ms, window.end_ms, protocol.steady_tolerance
    ).steady
    inside = window.select(requests)
    ttfts = [math.inf if r["ttftMs"] is None else r["ttftMs"] for r in inside]

    served = [r["ttftMs"] for r in inside if r["status"] == "completed"]

    def finite(value):
        return None if math.isinf(value) else value

    return {
        "seed": job.seed,
        "rate": len(inside) / window.length_s,
        "submitted": len(inside),
        "failed": len(inside) - len(served),
        "steady": steady,
        **{f"p{p}": finite(percentile(ttfts, p)) for p in (50, 90, 99)},
        **{f"served_p{p}": percentile(served, p) for p in (50, 90, 99)},
    }


def open_protocol(closed, rate: float):
    """``closed`` with Poisson arrivals at ``rate`` req/s instead of its users."""
    doc = closed.to_json() | {"name": f"{closed.name}-open", "loads": [rate]}
    doc["workload"] = {**doc["workload"], "arrivals": {"process": "poisson"}}
    return parse_protocol(doc, "the open-loop protocol")


def loops(unit: Unit) -> dict:
    """The closed loop of LOOPS over its replications, then an open loop (Poisson) at the
    closed loop's mean realised rate, with the same seeds, on the same tier."""
    closed = load_protocol(unit.lab_dir / LOOPS["protocol"])
    names = tuple(p["name"] for p in unit.policies)
    tier = load_tier(unit.lab_dir / LOOPS["tier"], names)
    return {**cached(unit, "loops"), "protocol": closed, "tier": tier}


def refresh(unit: Unit, only: list[str] | None = None) -> list[str]:
    """Make the cached sections (all, or ``only``) now and write lesson_cache.json."""
    doc = _read_cache()
    doc["generatedBy"] = "python labs/unit08/lesson_runs.py"
    made = []
    for name, (files, make) in sections(unit).items():
        if only is None or name in only:
            print(f"making '{name}'", file=sys.stderr)
            doc[name] = {"key": input_key(files), "data": make()}
            made.append(name)
    write_atomic(CACHE, json.dumps(doc, indent=1, allow_nan=False) + "\n")
    return made


def _progress(done: int, total: int) -> None:
    print(f"\r{done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    from grader.units import load_unit

    unit = load_unit("unit08")
    only = None if "--all" in (argv or sys.argv[1:]) else stale_sections(unit)
    if not only and only is not None:
        print(f"{CACHE.relative_to(CODE_ROOT)} is up to date")
        return 0
    made = refresh(unit, only)
    print(f"wrote {CACHE.relative_to(CODE_ROOT)}: {', '.join(made)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
