"""Unit 09's notebook answer keys and checks (a plug-in: ``notebook.answer_keys`` in unit.yaml).

``grader.course.nbcheck`` loads this file by path and calls ``KEYS[case](unit)``. Every key is
computed at call time from runs of the engine: the lab's own example and situation files
(``ex31_10.py``, ``tailruns.py``, ``ex31_13.py``'s follow-ups), the reference policies
(``grader.reference``) where the notebook runs the student's, and the reference ``measure.py``
(``solutions/unit09/measure.py``) where the notebook calls the student's. The notebook's setup
is in ``notebook_setup.py``, which the builder reads too. ``CHECKS`` says how each autograded
cell is scored from the answers it hands in (``grader.course.nbscores``).
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path

import servesim

from grader import reference
from grader.course.nbscores import Close, Policies
from grader.plugins import load_file

HERE = Path(__file__).resolve().parent
SETUP = load_file(HERE / "notebook_setup.py")


@contextmanager
def lab_modules(unit):
    """The lab's ``tailruns``, ``ex31_10`` and ``ex31_13`` modules, loaded with the reference
    ``measure.py`` standing in for the student's; ``sys.path`` and ``sys.modules`` are as before
    afterwards (the lab files put their folder on the path and import by bare name)."""
    path, saved = list(sys.path), {n: sys.modules.get(n) for n in ("measure", "tailruns")}
    try:
        sys.modules["measure"] = load_file(unit.solutions_dir / "measure.py")
        sys.modules["tailruns"] = load_file(unit.lab_dir / "tailruns.py")
        ex10 = load_file(unit.lab_dir / "ex31_10.py")
        ex13 = load_file(unit.lab_dir / "ex31_13.py")
        yield sys.modules["measure"], sys.modules["tailruns"], ex10, ex13
    finally:
        sys.path[:] = path
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def stream_run(ex10) -> dict:
    """ex31_10.py's request (its lab's ``traces/ex31-10.json``) on its device (no pause
    deadline), as an extended run entry."""
    from servesim.runfile import build_run

    timeline = ex10.simulate(ex10.load_trace(), ex10.stream_aware, ex10.DEVICE)
    return build_run("stream_aware", {}, ex10.DEVICE, timeline, None, extended=True)


def fill_figures(run: dict) -> dict:
    """31.10's figures read from the stream's run: when the buffer first filled (the start of
    its first pause), the tokens emitted by then, the rates, the closed form, the resume."""
    kib = SETUP.D1["kib"]
    (request,) = run["requests"]
    pause, resume = request["pausedMs"][0]
    before = [t for t in request["tokenTimesMs"] if t <= pause]
    produce = run["device"]["streamEventBytes"] * len(before) / (before[-1] / 1000) / kib
    read = request["readBytesPerS"] / kib
    return {
        "pause_s": pause / 1000,
        "tokens_before_pause": len(before),
        "produce_kib_s": produce,
        "read_kib_s": read,
        "fill_s_formula": run["device"]["streamBufferBytes"] / kib / (produce - read),
        "resume_s": resume / 1000,
    }


def fill_key(unit) -> dict:
    """Exercise 31.10: the fill time of ex31_10.py's buffer, from its run (on a variant, with
    the student's own read rate: this key reads the varied ``ex31-10``)."""
    with lab_modules(unit) as (_, _, ex10, _):
        return fill_figures(stream_run(ex10))


def _device_file(unit, relative: str):
    doc = json.loads((unit.lab_dir / relative).read_text(encoding="utf-8"))
    return servesim.DeviceProfile.from_json(doc.get("device", doc), source=relative)


def evidence_runs(unit, tailruns) -> dict[str, dict]:
    """31.12's runs by cause: the tailruns situations and the reference cancel_aware on a pool
    that preempts (the notebook runs the student's with simulate.py)."""
    runs = {
        cause: tailruns.engine_run(tailruns.SITUATIONS[name]())
        for cause, name in SETUP.D2["situations"].items()
    }
    path = unit.lab_dir / "traces" / f"{SETUP.D2['recompute']['trace']}.json"
    runs["recompute"] = recompute_run(unit, reference.load_trace(unit, str(path)))
    return {cause: runs[cause] for cause in SETUP.D2_RUNS}


def recompute_run(unit, trace) -> dict:
    """31.12's recompute run on ``trace`` (a parsed trace): the reference policy of
    ``SETUP.D2["recompute"]`` with its default parameters, on its device."""
    spec = SETUP.D2["recompute"]
    policy = next(p for p in unit.policies if p["name"] == spec["policy"])
    params = {name: meta["default"] for name, meta in policy.get("params", {}).items()}
    device = _device_file(unit, spec["device"])
    return reference.run_reference(unit, trace, spec["policy"], params, device)


def shares(measure, run: dict) -> dict:
    """The measurements of one run as the notebook asks for them: each Ratio as [num, den]."""
    arrivals = [r["arrivalMs"] for r in run["requests"]]
    slow = measure.slow_clients(run)
    split = measure.itl_split(run)
    return {
        "prefill_amplification": [*_pair(measure.prefill_amplification(run))],
        "waiting_share": [*_pair(measure.waiting_share(run))],
        "mean_queue": measure.mean_queue(run, min(arrivals), max(arrivals)),
        "itl_gaps": [len(split.with_prefill), len(split.without_prefill), len(split.paused)],
        "slow_clients": None if slow is None else [*_pair(slow.paused)],
    }


def _pair(ratio) -> tuple:
    return ratio.num, ratio.den


def _value(pair) -> float:
    return 0.0 if pair is None or not pair[1] else pair[0] / pair[1]


def plan_of(figures: dict) -> dict:
    """Which measurement tells each run's cause apart: every measurement of ``D2_MEASURES``
    is credited to the run where its share is largest."""
    return {
        max(figures, key=lambda cause: _value(figures[cause][name])): name
        for name in SETUP.D2_MEASURES
    }


def evidence_key(unit) -> dict:
    """Exercise 31.12: each run's measurements, the plan and each measurement's denominator."""
    with lab_modules(unit) as (measure, tailruns, _, _):
        runs = evidence_runs(unit, tailruns)
        figures = {cause: shares(measure, run) for cause, run in runs.items()}
        slow = measure.slow_clients(runs["slow clients"])
        some = runs["overload"]
        ratios = {
            "prefill_amplification": measure.prefill_amplification(some),
            "waiting_share": measure.waiting_share(some),
            "slow_clients": slow.paused,
        }
    denominators = {name: r.what.split(" / ", 1)[1] for name, r in ratios.items()}
    return {"figures": figures, "plan": plan_of(figures), "denominators": denominators}


def diagnosis_figures(measure, run: dict, baseline: dict) -> dict:
    """The diagnosis of one run against the baseline, with the numbers the notebook asks for."""
    got = measure.diagnose(run, baseline)
    ev = got.evidence
    return {
        "cause": got.cause.value,
        "p99_wait_ms": ev.p99_wait_ms,
        "p99_itl_ms": ev.p99_itl_ms,
        "rejected": ev.rejected.num,
    }


def diagnosis_key(unit) -> dict:
    """Exercise 31.13: every situation's diagnosis, and the diagnosis after each follow-up."""
    with lab_modules(unit) as (measure, tailruns, _, ex13):
        baseline = tailruns.baseline_run()
        causes, after = {}, {}
        for name, rows in tailruns.SITUATIONS.items():
            causes[name] = diagnosis_figures(measure, tailruns.engine_run(rows()), baseline)
            for label, settings in ex13.FOLLOW_UPS.get(name, []):
                run = tailruns.engine_run(rows(), **settings)
                after.setdefault(name, {})[label] = diagnosis_figures(measure, run, baseline)
    return {"causes": causes, "after": after}


KEYS = {"fill": fill_key, "evidence": evidence_key, "diagnosis": diagnosis_key}

CHECKS = {
    "policies_hidden": (Policies(),),
    "d1_fill": (Close("d1", "fill"),),
    "d2_figures": (Close("d2", "evidence", lambda key: key["figures"]),),
    "d2_plan": (
        Close("d2_plan", "evidence", lambda key: key["plan"]),
        Close("d2_denominators", "evidence", lambda key: key["denominators"]),
    ),
    "d3_causes": (Close("d3", "diagnosis", lambda key: key["causes"]),),
    "d3_after": (Close("d3_after", "diagnosis", lambda key: key["after"]),),
}
