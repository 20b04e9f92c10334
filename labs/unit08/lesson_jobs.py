"""What unit 08's protocol runs run: their settings, the code they run with (the lab's
``experiment.py`` and the reference solution) and the job each worker process does.

The lab's own ``experiment.py`` runs them with the reference solution, exactly what a
student's ``sweep.py --protocol`` runs: the tier sweep of ``protocols/lesson.json``, the short
single-seed sweep the lesson warns about (``short_job``), closed vs open loop (``loops_job``,
``protocols/closed-loop.json``) and the length buckets with their wait windows
(``buckets_job``). The source of each job and setting here is part of its cache key
(``lesson_cache.py``): editing one makes its section stale.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import statistics
import sys
from pathlib import Path

from servesim.metrics import percentile
from servesim.protocol import parse_protocol

from grader import reference
from grader.plugins import load_file
from grader.sitebuild.runs import device
from grader.units import Unit

HERE = Path(__file__).resolve().parent
events = load_file(HERE / "lesson_events.py")
padding_share = events.padding_share

PROTOCOL = "protocols/lesson.json"


LOOPS = {"protocol": "protocols/closed-loop.json", "tier": "tiers/small-paged.json"}


SHORT = {"requests": 300, "seed": 1}  # the single short run the lab once answered with


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


def workers() -> int:
    """Processes for protocol runs: every core where workers fork (Linux), else one."""
    return (os.cpu_count() or 1) if sys.platform == "linux" else 1


def tier_paths(unit: Unit) -> list[Path]:
    return sorted((unit.lab_dir / "tiers").glob("*.json"))


def solution_measure(unit: Unit):
    """The reference measure.py, as experiment.py's workers load it."""
    return experiment(unit).module(*code(unit).measure)


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
