"""Unit 08's notebook answer keys and checks (a plug-in: ``notebook.answer_keys`` in unit.yaml).

``grader.course.nbcheck`` loads this file by path and calls ``KEYS[case](unit)``. Every key is
computed at call time: the engine runs the reference policies (``grader.reference``) and the
reference ``measure.py`` (``solutions/unit08/measure.py``) measures the runs. The notebook's
setup (runs, SLOs, windows, loads, targets) is in ``notebook_setup.py``, which the notebook
builder reads too, so the two cannot drift apart. Each key has the shape the notebook asks for.
``CHECKS`` says how each autograded cell is scored from the answers it hands in
(``grader.course.nbscores``); the notebook's kernel sees neither.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict
from pathlib import Path

import servesim
from servesim.metrics import percentile
from servesim.protocol import load_protocol, measurement_window, parse_protocol
from servesim.tiers import load_tier

from grader import reference
from grader.course.nbscores import NUMBER, Close, Filled, Policies
from grader.plugins import load_file
from grader.units import load_unit

HERE = Path(__file__).resolve().parent
SETUP = load_file(HERE / "notebook_setup.py")
lesson_jobs = load_file(HERE.parent / "lesson_jobs.py")


def _measure(unit):
    """The reference measure.py of the unit (as the lab's experiment.py loads it)."""
    return lesson_jobs.solution_measure(unit)


def _trace(unit, name: str):
    return reference.load_trace(unit, str((unit.lab_dir / "traces" / f"{name}.json").resolve()))


def _device_file(unit, relative: str):
    doc = json.loads((unit.lab_dir / relative).read_text(encoding="utf-8"))
    return servesim.DeviceProfile.from_json(doc.get("device", doc), source=relative)


def _params(unit, policy: str, budget: int | None) -> dict:
    spec = next(p for p in unit.policies if p["name"] == policy)
    params = {name: meta["default"] for name, meta in spec.get("params", {}).items()}
    if "budget" in params and budget is not None:
        params["budget"] = budget
    return params


def goodput_key(unit) -> dict:
    """Deliverable 1: goodput with both denominators and both TPOT means, per policy, over the
    trace's measurement window."""
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
        requests = run["requests"]
        arrivals = [r["arrivalMs"] for r in requests]
        window = measurement_window(arrivals, d1["warmup"], d1["cooldown"])
        inside = window.select(requests)
        report = measure.goodput(requests, slo, window.start_ms, window.end_ms)
        by_request, by_token = measure.tpot_means(inside)
        key[policy] = {
            "submitted": report.submitted,
            "rejected": sum(r["status"] == measure.REJECTED for r in inside),
            "cancelled": sum(r["status"] == measure.CANCELLED for r in inside),
            "succeeded": report.succeeded,
            "qualifying": report.qualifying,
            "goodput_per_s": report.goodput_per_s,
            "attainment_submitted": report.attainment_over_submitted,
            "attainment_succeeded": report.attainment_over_succeeded,
            "tpot_request_weighted": by_request,
            "tpot_token_weighted": by_token,
        }
    return key


def _loop_runs(unit, protocol, tier_path: Path) -> list[list[dict]]:
    """Each replication's request records, as ``simulate.py --protocol`` makes them."""
    ex, code = lesson_jobs.experiment(unit), lesson_jobs.code(unit)
    jobs = ex.jobs_of(protocol, [str(tier_path)], code)
    return [ex.simulate_job(job)[2] for job in jobs]


def loop_summary(unit, measure, protocol, requests: list[dict]) -> dict:
    """One replication of a loop over the protocol's window (the notebook's d2 fields)."""
    got = lesson_jobs.experiment(unit).replicate(measure, protocol, requests)
    inside = [r for r in requests if got.window_start_ms <= r["arrivalMs"] < got.window_end_ms]
    served = [r["ttftMs"] for r in inside if r["status"] == measure.COMPLETED]
    return {
        "p50_ttft": percentile(served, 50),
        "p99_ttft": got.p99_ttft_ms,
        "rejected": sum(r["status"] == measure.REJECTED for r in inside),
        "cancelled": sum(r["status"] == measure.CANCELLED for r in inside),
        "attainment_submitted": got.goodput.attainment_over_submitted,
        "attainment_succeeded": got.goodput.attainment_over_succeeded,
    }


def mean_or_none(values: list) -> float | None:
    return None if None in values else statistics.fmean(values)


def protocol_key(unit) -> dict:
    """Deliverable 2: the closed loop's rate, both loops' figures (means over replications),
    how often the open loop's p99 is the higher one, and Little's law on the first open run."""
    measure = _measure(unit)
    d2 = SETUP.D2
    closed = load_protocol(unit.lab_dir / d2["protocol"])
    think_s = closed.arrivals.think_ms / 1000
    users = closed.loads[0]
    tier_path = unit.lab_dir / d2["tier"]
    closed_runs = _loop_runs(unit, closed, tier_path)
    measured, little = [], []
    for requests in closed_runs:
        window = closed.window(requests)
        measured.append(len(window.select(requests)) / window.length_s)
        residence = statistics.fmean(r["statusMs"] - r["arrivalMs"] for r in requests) / 1000
        little.append(users / (residence + think_s))
    rate = {"measured": statistics.fmean(measured), "little": statistics.fmean(little)}
    opened = lesson_jobs.open_protocol(closed, round(rate["measured"], 2))
    open_runs = _loop_runs(unit, opened, tier_path)
    loops = {}
    for name, protocol, runs in (("closed", closed, closed_runs), ("open", opened, open_runs)):
        rows = [loop_summary(unit, measure, protocol, requests) for requests in runs]
        loops[name] = {field: mean_or_none([r[field] for r in rows]) for field in rows[0]}
        loops[name]["per_replication_p99"] = [r["p99_ttft"] for r in rows]
    above = sum(
        (o is None) or (c is not None and o > c)
        for c, o in zip(
            loops["closed"].pop("per_replication_p99"),
            loops["open"].pop("per_replication_p99"),
            strict=True,
        )
    )
    first = open_runs[0]
    window = opened.window(first)
    law = measure.little(first, window.start_ms, window.end_ms)
    return {
        "rate": rate,
        "loops": loops,
        "open_above_p99": above,
        "replications": len(closed_runs),
        "little": asdict(law),
    }


def choice_of(unit, protocol, results: list[dict]) -> dict:
    """Each tier's operating point and the cheapest feasible tier (or NOT_YET_KNOWN), as the
    notebook's d3 asks, from ``results`` judged under ``protocol``'s targets."""
    ex, measure = lesson_jobs.experiment(unit), _measure(unit)
    names = tuple(p["name"] for p in unit.policies)
    tiers = [load_tier(unit.lab_dir / "tiers" / f"{t}.json", names) for t in SETUP.D3["tiers"]]
    cells = ex.judge(protocol, results, measure)
    points = ex.operating_points(tiers, cells)
    choice = ex.cheapest(tiers, cells, points)
    chosen = {
        p.tier.name: None
        if p.cell is None
        else {
            "load": p.cell.load,
            "goodput_per_s": p.cell.figures["goodput"].mean,
            "cost_per_1000": p.cost.mean,
        }
        for p in points
    }
    if choice.best is not None and choice.decided:
        cheapest = choice.best.tier.name
    else:
        cheapest = None if choice.decided else SETUP.NOT_YET_KNOWN
    return {"points": chosen, "cheapest": cheapest}


def sweep_results(unit) -> tuple:
    """The notebook's sweep protocol run by the lab's experiment.py with the reference."""
    d3 = SETUP.D3
    protocol = load_protocol(unit.lab_dir / d3["protocol"])
    paths = [str(unit.lab_dir / "tiers" / f"{t}.json") for t in d3["tiers"]]
    ex = lesson_jobs.experiment(unit)
    return protocol, ex.run_protocol(protocol, paths, lesson_jobs.code(unit), lesson_jobs.workers())


def sweep_key(unit) -> dict:
    """Deliverable 3: each tier's operating point and the cheapest feasible tier, at the
    protocol's targets and at the looser ones, on the same runs."""
    protocol, results = sweep_results(unit)
    out = {}
    for label, targets in SETUP.D3["targets"].items():
        judged = parse_protocol({**protocol.to_json(), "targets": targets}, label)
        out[label] = choice_of(unit, judged, results)
    return out


KEYS = {"goodput": goodput_key, "protocol": protocol_key, "sweep": sweep_key}


def _protocol_reads(protocol: str) -> tuple[str, ...]:
    """The lab files a run of a protocol reads: the protocol and the trace of its sizes."""
    doc = json.loads((load_unit("unit08").lab_dir / protocol).read_text(encoding="utf-8"))
    return (protocol, f"traces/{doc['workload']['sizes']}.json")


# The lab files each key reads (``grader.variants.nbkeys``): a key reading a file that a
# student's variant redraws (a public trace, a protocol's seeds) is computed on that variant;
# the others once for the class, on a lab folder without the varied files (so a file left out
# here is an error, not a stale key).
READS = {
    "goodput": (f"traces/{SETUP.D1['trace']}.json", SETUP.D1["device"]),
    "protocol": _protocol_reads(SETUP.D2["protocol"]),
    "sweep": _protocol_reads(SETUP.D3["protocol"]),
}


def _d1(group: str):
    """Deliverable 1's expected fields of one group, for every policy."""
    fields = SETUP.D1_FIELDS[group]
    return lambda key: {p: {f: key[p][f] for f in fields} for p in SETUP.D1["policies"]}


_first, _second = list(SETUP.D3["targets"])

CHECKS = {
    "policies_hidden": (Policies(),),
    "d1_counts": (Close("d1", "goodput", _d1("counts")),),
    "d1_rates": (Close("d1", "goodput", _d1("rates")),),
    "d1_tpot": (Close("d1", "goodput", _d1("tpot")),),
    "d2_prediction": (Filled("d2_prediction", {"closed": NUMBER, "open": NUMBER}),),
    "d2_rate": (Close("d2_rate", "protocol", lambda key: key["rate"]),),
    "d2_loops": (
        Close("d2_loops", "protocol", lambda key: key["loops"]),
        Close("d2_open_above", "protocol", lambda key: key["open_above_p99"]),
    ),
    "d2_little": (Close("d2_little", "protocol", lambda key: key["little"]),),
    f"d3_{_first}": (Close("d3", "sweep", lambda key: key[_first], (_first,)),),
    f"d3_{_second}": (Close("d3", "sweep", lambda key: key[_second], (_second,)),),
}
