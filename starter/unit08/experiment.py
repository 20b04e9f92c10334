"""Run a protocol over tiers x loads x replications and judge each cell (given; not graded).

``sweep.py`` and the notebook call it with YOUR ``policies.py`` and ``measure.py``; the course's
lesson page calls it with the reference solution. For every tier, every load of the protocol and
every seed (one replication each), a worker process simulates the tier under that replication's
arrivals and measures it with ``measure.replication`` over the protocol's window. Then each
(tier, load) cell gets a confidence interval per figure (``measure.interval``) and a verdict
(``measure.verdict``), each tier an operating point (its highest feasible load), and the tiers a
cheapest feasible one, which may be "not yet known" when the intervals cannot tell.

Runs use every core you give them (``workers``): each replication is independent, so the results
do not depend on how many processes ran them.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from servesim import simulate
from servesim.labconfig import load_lab
from servesim.protocol import Protocol, parse_protocol
from servesim.runfile import request_records
from servesim.tiers import Tier, load_tier
from servesim.trace import read_trace_file, resolve_trace

# The figures of a replication (name -> where it is in measure.replication's answer); a
# missing value (None) is an infinite p99 or a ratio with nothing to divide.
FIGURES = {
    "goodput": ("goodput", "goodput_per_s"),
    "attainment": ("goodput", "attainment_over_submitted"),
    "attainment_succeeded": ("goodput", "attainment_over_succeeded"),
    "p99_ttft_ms": ("p99_ttft_ms",),
    "quality": ("quality_pass_rate",),
}


@dataclass(frozen=True)
class Code:
    """Where the policies and the measurements come from (a file and the module name it gets)."""

    policies: tuple[str, str]  # (module name, path)
    measure: tuple[str, str]
    lab_dir: str

    @classmethod
    def of_lab(cls, lab_dir: Path) -> Code:
        lab_dir = Path(lab_dir).resolve()
        return cls(
            ("policies", str(lab_dir / "policies.py")),
            ("measure", str(lab_dir / "measure.py")),
            str(lab_dir),
        )


@dataclass(frozen=True)
class Job:
    code: Code
    protocol: dict  # Protocol.to_json(): plain data crosses process boundaries
    tier_path: str
    load: float
    seed: int


_MODULES: dict[tuple[str, str], object] = {}


def module(name: str, path: str):
    """The module in ``path`` under ``name``, loaded once per process."""
    if (name, path) not in _MODULES:
        spec = importlib.util.spec_from_file_location(name, path)
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[name] = loaded  # dataclasses look their module up here
        spec.loader.exec_module(loaded)
        _MODULES[name, path] = loaded
    return _MODULES[name, path]


def simulate_job(job: Job) -> tuple[Tier, Protocol, list[dict]]:
    """Simulate one replication of one tier at one load: the tier, the protocol and the run's
    request records (as in a run file)."""
    policies = module(*job.code.policies)
    lab = load_lab(Path(job.code.lab_dir))
    protocol = parse_protocol(job.protocol)
    tier = load_tier(job.tier_path, tuple(p.name for p in lab.policies))
    sizes = read_trace_file(resolve_trace(protocol.sizes, lab.traces_dir))
    trace, closed = protocol.workload(sizes, job.load, job.seed)
    spec = lab.policy(tier.policy)
    params = {name: meta["default"] for name, meta in spec.params.items()}
    if "budget" in params and tier.budget is not None:
        params["budget"] = tier.budget
    function = getattr(policies, spec.function)
    timeline = simulate(
        trace,
        lambda view: function(view, **params),
        tier.device,
        budget=params.get("budget"),
        queue_cap=tier.queue_cap,
        admit=getattr(policies, spec.admit) if spec.admit else None,
        closed=closed,
    )
    return tier, protocol, request_records(timeline, extended=True)


def replicate(measure, protocol: Protocol, requests: list[dict], passes=None):
    """``measure.replication`` of one run under ``protocol`` (its SLO, window and tolerance)."""
    slo = measure.Slo(ttft_ms=protocol.slo_ttft_ms, tpot_ms=protocol.slo_tpot_ms)
    return measure.replication(
        requests,
        slo,
        protocol.warmup_requests,
        protocol.cooldown_requests,
        protocol.steady_tolerance,
        passes,
    )


def run_job(job: Job) -> dict:
    """One replication of one tier at one load: its figures (``measure.replication``)."""
    tier, protocol, requests = simulate_job(job)
    measure = module(*job.code.measure)

    def passes(request):
        return measure.quality_passes(request["id"], tier.name, tier.quality_pass_rate, job.seed)

    result = replicate(measure, protocol, requests, passes)
    return {
        "tier": tier.name,
        "load": job.load,
        "seed": job.seed,
        "replication": dataclasses.asdict(result),
    }


def figure(replication: dict, name: str):
    value = replication
    for key in FIGURES[name]:
        value = value[key]
    return value


def _context():
    """fork where it is the safe default (Linux): workers start fast and share loaded code."""
    return multiprocessing.get_context("fork") if sys.platform == "linux" else None


def jobs_of(protocol: Protocol, tier_paths: list[str], code: Code) -> list[Job]:
    """One job per tier, load and seed, in that order."""
    return [
        Job(code, protocol.to_json(), str(path), load, seed)
        for path in tier_paths
        for load in protocol.loads
        for seed in protocol.seeds
    ]


def run_jobs(jobs: list[Job], workers: int = 1, progress=None, worker=run_job) -> list:
    """``worker(job)`` for every job, in the jobs' order whatever ``workers`` (processes).

    ``progress(done, total)`` is called after each finished job.
    """
    if workers <= 1:
        results = []
        for job in jobs:
            results.append(worker(job))
            if progress:
                progress(len(results), len(jobs))
        return results
    # the slowest runs first: a low load (or few users) simulates the longest time
    order = sorted(range(len(jobs)), key=lambda i: jobs[i].load)
    done: dict[int, object] = {}
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        for index, result in zip(order, pool.map(worker, [jobs[i] for i in order])):
            done[index] = result
            if progress:
                progress(len(done), len(jobs))
    return [done[i] for i in range(len(jobs))]


def run_protocol(
    protocol: Protocol, tier_paths: list[str], code: Code, workers: int = 1, progress=None
) -> list[dict]:
    """Every replication (``run_job``) of every tier at every load of ``protocol``."""
    return run_jobs(jobs_of(protocol, tier_paths, code), workers, progress)


@dataclass(frozen=True)
class Cell:
    """One tier at one load: its replications, an interval per figure and the verdict."""

    tier: str
    load: float
    replications: list[dict]  # measure.replication answers, in seed order
    figures: dict  # figure name -> measure.Interval, or None when a replication has no value
    steady: int  # replications whose backlog held still
    verdict: object  # measure.Verdict

    @property
    def outcome(self) -> str:
        return self.verdict.outcome


def judge(protocol: Protocol, results: list[dict], measure) -> list[Cell]:
    """The cells of a protocol's results (tier and load order as run). A cell counts as steady
    when more than half of its replications are (``measure.steady_state``)."""
    cells: dict[tuple[str, float], list[dict]] = {}
    for result in results:
        cells.setdefault((result["tier"], result["load"]), []).append(result["replication"])
    return [_cell(protocol, tier, load, reps, measure) for (tier, load), reps in cells.items()]


def _cell(protocol: Protocol, tier: str, load: float, reps: list[dict], measure) -> Cell:
    figures = {}
    for name in FIGURES:
        values = [figure(r, name) for r in reps]
        defined = None not in values and len(values) >= 2
        figures[name] = measure.interval(values, protocol.confidence) if defined else None
    checks = [(figures["attainment"], measure.Target("attainment", protocol.attainment_target))]
    if protocol.quality_target is not None and figures["quality"] is not None:
        checks.append((figures["quality"], measure.Target("quality", protocol.quality_target)))
    steady = sum(bool(r["steady"]["steady"]) for r in reps)
    verdict = measure.verdict(checks, steady * 2 > len(reps))
    return Cell(tier, load, reps, figures, steady, verdict)


@dataclass(frozen=True)
class Cost:
    """Dollars per 1,000 qualifying requests: at the mean goodput, and its interval's ends."""

    mean: float
    low: float  # at the goodput interval's high end
    high: float  # at its low end (inf when that end is <= 0)


def cost_of(tier: Tier, goodput) -> Cost:
    """pricePerHour / (goodput per hour) x 1,000, from a goodput interval."""

    def at(rate: float) -> float:
        return math.inf if rate <= 0 else tier.price_per_hour / (rate * 3600) * 1000

    return Cost(at(goodput.mean), at(goodput.high), at(goodput.low))


@dataclass(frozen=True)
class OperatingPoint:
    tier: Tier
    cell: Cell | None  # the highest load whose verdict is feasible (None: none is)
    cost: Cost | None


def operating_points(tiers: list[Tier], cells: list[Cell]) -> list[OperatingPoint]:
    out = []
    for tier in tiers:
        feasible = [c for c in cells if c.tier == tier.name and c.outcome == "feasible"]
        best = max(feasible, key=lambda c: c.load, default=None)
        cost = cost_of(tier, best.figures["goodput"]) if best is not None else None
        out.append(OperatingPoint(tier, best, cost))
    return out


@dataclass(frozen=True)
class Choice:
    """The cheapest feasible tier, and whether the runs can tell it from the others."""

    best: OperatingPoint | None  # the lowest mean cost among the feasible operating points
    decided: bool
    rivals: tuple[str, ...]  # tiers that could still be cheaper: (load, tier) cells below

    def text(self) -> str:
        if self.best is None:
            if self.decided:
                return "none (no tier is feasible at any load of the protocol)"
            return f"not yet known (no tier is feasible yet; undecided: {', '.join(self.rivals)})"
        name = self.best.tier.name
        if self.decided:
            return name
        return f"not yet known ({name} or {', '.join(self.rivals)}: more replications decide)"


def cheapest(tiers: list[Tier], cells: list[Cell], points: list[OperatingPoint]) -> Choice:
    """The tier with the lowest cost among the feasible operating points, decided only when no
    other tier could beat it: every other tier's feasible or not-yet-known cells must cost more
    even at the high end of their goodput interval than the best costs at its low end."""
    feasible = [p for p in points if p.cost is not None]
    by_name = {t.name: t for t in tiers}
    open_cells = [c for c in cells if c.outcome == "not yet known"]
    if not feasible:
        rivals = tuple(dict.fromkeys(f"{c.tier}@{c.load:g}" for c in open_cells))
        return Choice(None, not rivals, rivals)
    best = min(feasible, key=lambda p: p.cost.mean)
    rivals = []
    for cell in cells:
        if cell.tier == best.tier.name or cell.outcome == "infeasible":
            continue
        goodput = cell.figures["goodput"]
        low = cost_of(by_name[cell.tier], goodput).low if goodput else 0.0
        if low <= best.cost.high and cell.tier not in rivals:
            rivals.append(cell.tier)
    return Choice(best, not rivals, tuple(rivals))
