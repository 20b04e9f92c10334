"""Unit 08's lesson page: the figures and numbers, all from reference runs made at build time.

Site plug-in (docs/units.md, "Site"): ``infralab site build`` calls ``lesson_context(unit)``.
Its parts, each loaded by path from this folder: the runs (``lesson_runs.py`` lists them:
``lesson_constructions.py``, ``lesson_protocol_runs.py`` and their settings in
``lesson_jobs.py``), the figures drawn from them
(``lesson_figures.py``) and the values the text quotes (``lesson_text.py``). Claims about them
sit in lesson.html.j2 next to the sentences.
"""

from __future__ import annotations

from pathlib import Path

from markupsafe import Markup

from grader.sitebuild.plugins import load_module
from grader.sitebuild.runs import device
from grader.units import Unit

HERE = Path(__file__).resolve().parent
constructions = load_module(HERE / "lesson_constructions.py")
protocol_runs = load_module(HERE / "lesson_protocol_runs.py")
lesson_jobs = load_module(HERE / "lesson_jobs.py")
figures = load_module(HERE / "lesson_figures.py")
text = load_module(HERE / "lesson_text.py")
steadiness = load_module(HERE / "lesson_steadiness.py")
calibrated = load_module(HERE / "lesson_calibrated.py")


def vllm_knobs() -> dict:
    """The knob table (``vllm/knobs.yaml``) and the vLLM version its names are checked against."""
    import yaml

    here = Path(__file__).parent / "vllm"
    doc = yaml.safe_load((here / "knobs.yaml").read_text(encoding="utf-8"))
    version = (here / "engine_args.txt").read_text(encoding="utf-8").split()[2]
    return {"knobs": doc["knobs"], "version": version}


def lesson_context(unit: Unit) -> dict:
    runs = constructions.Runs(unit)
    pair = constructions.batching(runs)
    kv = constructions.kv_pool(runs)
    lifo = constructions.lifo_victim(runs)
    sweep = protocol_runs.sweep(unit)
    short = protocol_runs.short(unit, sweep)
    measure = lesson_jobs.solution_measure(unit)
    loop_runs = protocol_runs.loops(unit)
    loops = text.loops_compared(loop_runs, measure)
    sweep_svgs = figures.sweep_figures(sweep)
    points = text.operating_points(sweep)
    best = sweep["choice"].best
    short["misled"] = text.misled(short, sweep)
    timed = constructions.timed_vs_budgeted(runs)
    buckets = protocol_runs.buckets(unit)
    return {
        "buckets": buckets,
        "buckets_svg": Markup(figures.buckets_figure(buckets)),
        "dev": device(unit).to_json(),
        "batching": pair,
        "batching_svg": Markup(figures.batching_figure(pair)),
        "kv": kv,
        "kv_draws": text.kv_draws(kv),
        "kv_svg": Markup(figures.kv_figure(kv)),
        "lifo": lifo,
        "sweep": sweep,
        "protocol": sweep["protocol"],
        "sweep_rows": text.sweep_rows(sweep["cells"]),
        "ops": points,
        "cheapest_options": text.cheapest_options(
            points, sweep["protocol"], best.tier.name if best else None
        ),
        "facts": text.facts(sweep),
        "loops_protocol": loop_runs["protocol"],
        "choice": sweep["choice"],
        "short": short,
        "book": constructions.chapter_example(measure),
        "goodput_svg": Markup(sweep_svgs["goodput"]),
        "attainment_svg": Markup(sweep_svgs["attainment"]),
        "p99_svg": Markup(sweep_svgs["p99"]),
        "loops": loops,
        "loops_svg": Markup(figures.loops_figure(loops, loop_runs["protocol"].slo_ttft_ms)),
        "timed": timed,
        "single": steadiness.single_runs(measure, sweep["protocol"], kv, timed),
        "calibrated": calibrated.calibrated(unit, protocol_runs.cache, lesson_jobs, sweep),
        "vllm": vllm_knobs(),
        "timed_svg": Markup(figures.timed_figure(timed)),
        "settings": {
            "pool": constructions.POOL,
            "loops": lesson_jobs.LOOPS,
            "protocol_file": lesson_jobs.PROTOCOL,
            "short": lesson_jobs.SHORT,
            "burst_seeds": constructions.BURST_SEEDS,
            "k": constructions.BATCH_K,
        },
    }
