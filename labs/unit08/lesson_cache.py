"""The cache of unit 08's protocol runs: ``lesson_cache.json``, one section per lesson_jobs.

Protocol runs take minutes, so their results are kept under a key hashed from every input (the
engine, the solution, experiment.py, the protocol, tier and trace files, and the source of the
jobs and settings of ``lesson_jobs.py`` they run). When a key does not match, the build makes
that section again (and says so), and ``python labs/unit08/lesson_runs.py`` writes it back. CI
builds the site from a fresh clone, where the committed cache is what it uses.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import statistics
import sys
from pathlib import Path

from servesim.protocol import load_protocol
from servesim.runfile import write_atomic

from grader.plugins import load_file
from grader.units import CODE_ROOT, Unit

HERE = Path(__file__).resolve().parent
CACHE = HERE / "lesson_cache.json"
lesson_jobs = load_file(HERE / "lesson_jobs.py")  # the jobs and settings of each section
lesson_calibrated = load_file(HERE / "lesson_calibrated.py")  # the sweep under a fitted profile


DRAWING = ("runview", "htmlsafe.py")  # draw run files as pages, never make them


def _inputs(unit: Unit, lab_files, code=()) -> dict[str, bytes]:
    """Everything a protocol section's results depend on, by a location-free label: the
    engine, the solution, the lab's experiment.py and lab.json, the section's own lab files
    (protocol, tiers, trace) and the source of the jobs and settings it runs (``code``)."""
    engine = CODE_ROOT / "servesim"
    paths = {
        f"servesim/{p.relative_to(engine)}": p
        for p in sorted(engine.rglob("*.py"))
        if not set(DRAWING) & set(p.relative_to(engine).parts)
    }
    paths |= {f"solutions/{n}": unit.solutions_dir / n for n in ("policies.py", "measure.py")}
    for name in ("experiment.py", "lab.json", *lab_files):
        paths[f"lab/{name}"] = unit.lab_dir / name
    inputs = {label: path.read_bytes() for label, path in paths.items()}
    # "lesson_runs/" labels name a job or setting, wherever lesson_jobs.py keeps it
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
    """Each cached section: (its inputs, the function that makes its results)."""
    protocol = load_protocol(unit.lab_dir / lesson_jobs.PROTOCOL)
    closed = load_protocol(unit.lab_dir / lesson_jobs.LOOPS["protocol"])
    paths = [str(p) for p in lesson_jobs.tier_paths(unit)]
    sweep_files = [
        lesson_jobs.PROTOCOL,
        f"traces/{protocol.sizes}.json",
        *(f"tiers/{Path(p).name}" for p in paths),
    ]
    loop_files = [
        lesson_jobs.LOOPS["protocol"],
        lesson_jobs.LOOPS["tier"],
        f"traces/{closed.sizes}.json",
    ]
    ex, solution = lesson_jobs.experiment(unit), lesson_jobs.code(unit)

    def make_sweep():
        return ex.run_protocol(protocol, paths, solution, lesson_jobs.workers(), _progress)

    def make_short():
        jobs = ex.jobs_of(lesson_jobs.short_protocol(protocol), paths, solution)
        jobs = [j for j in jobs if j.seed == lesson_jobs.SHORT["seed"]]
        return ex.run_jobs(jobs, lesson_jobs.workers(), _progress, lesson_jobs.short_job)

    def make_loops():
        tier = [str(unit.lab_dir / lesson_jobs.LOOPS["tier"])]
        closed_jobs = ex.jobs_of(closed, tier, solution)
        closed_rows = ex.run_jobs(closed_jobs, lesson_jobs.workers(), None, lesson_jobs.loops_job)
        rate = round(statistics.fmean(r["rate"] for r in closed_rows), 3)
        opened = lesson_jobs.open_protocol(closed, rate)
        open_rows = ex.run_jobs(
            ex.jobs_of(opened, tier, solution), lesson_jobs.workers(), None, lesson_jobs.loops_job
        )
        return {"rate": rate, "closed": closed_rows, "open": open_rows}

    short_code = (
        lesson_jobs.short_job,
        lesson_jobs.legacy_passes,
        lesson_jobs.short_protocol,
        lesson_jobs.SHORT,
    )
    buckets_code = (lesson_jobs.buckets_job, lesson_jobs.padding_share, lesson_jobs.BUCKETS)
    return {
        "sweep": (_inputs(unit, sweep_files), make_sweep),
        "short": (_inputs(unit, sweep_files, short_code), make_short),
        "loops": (
            _inputs(
                unit,
                loop_files,
                (lesson_jobs.loops_job, lesson_jobs.open_protocol, lesson_jobs.LOOPS),
            ),
            make_loops,
        ),
        "buckets": (
            _inputs(unit, [f"traces/{lesson_jobs.BUCKETS['trace']}.json"], buckets_code),
            lambda: lesson_jobs.buckets_job(unit, lesson_jobs.BUCKETS),
        ),
        "calibrated": lesson_calibrated.section(
            unit, sys.modules[__name__], lesson_jobs, sweep_files
        ),
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
