"""Issue 50, exercise 31.13: a student's own ``tailruns.json`` (``public_traces.tailruns``)
keeps every situation's built-in cause and what every follow-up, the notebook's prose and the
lesson say of the runs, for every drawable value, and a broken file is one error line."""

from __future__ import annotations

import copy
import itertools
import json
import subprocess
import sys

import pytest
import servesim
from labtools import copy_lab

from grader.plugins import load_file
from grader.units import load_unit

UNIT = load_unit("unit09")
BUILDERS = load_file(UNIT.unit_dir / "public_traces.py")
KEYS = load_file(UNIT.unit_dir / "notebook" / "answer_keys.py")
EVICT_SEEDS = range(200)


@pytest.fixture(scope="module")
def recompute_waiting() -> float:
    """The largest waiting share of 31.12's recompute run (the reference ``cancel_aware`` on
    ``evict``, which a student draws too) over the shipped ``evict`` and 200 draws of it."""
    measure = load_file(UNIT.solutions_dir / "measure.py")
    worst = 0.0
    for seed in (None, *EVICT_SEEDS):
        doc = getattr(BUILDERS, KEYS.SETUP.D2["recompute"]["trace"])(seed=seed)
        trace = servesim.parse_trace(json.loads(json.dumps(doc)), source=f"seed {seed}")
        worst = max(worst, measure.waiting_share(KEYS.recompute_run(UNIT, trace)).value)
    return worst


@pytest.fixture(scope="module")
def lab():
    """The lab's ``tailruns`` and ``ex31_13`` with the reference ``measure.py``; its
    ``engine_run`` runs each distinct set of rows and settings once (``once``)."""
    with KEYS.lab_modules(UNIT) as (measure, tailruns, _, ex13):
        tailruns.engine_run = once(tailruns.engine_run)
        yield measure, tailruns, ex13


def once(engine_run):
    """``engine_run`` remembering its runs by their rows and settings: the draws repeat most
    runs (overload's do not depend on the light gap or the baseline's shift, no situation's on
    the baseline's shift), so each is made once. Callers only read a run."""
    runs: dict[str, dict] = {}

    def run(rows: list[dict], **settings) -> dict:
        key = json.dumps([rows, settings], sort_keys=True)
        if key not in runs:
            runs[key] = engine_run(rows, **settings)
        return runs[key]

    return run


class Claims:
    """What no longer holds, collected by ``claim``."""

    def __init__(self) -> None:
        self.broken: list[str] = []

    def claim(self, holds: bool, what: str) -> None:
        if not holds:
            self.broken.append(what)


def situation(lab, doc: dict, name: str, baseline: dict) -> dict:
    """``name``'s figures with ``doc``'s numbers, and after each of its follow-ups, as
    ``ex31_13.exercise()`` makes them (``after``: the follow-ups' figures in order)."""
    _, tailruns, ex13 = lab
    tailruns.values = lambda: doc
    rows = tailruns.SITUATIONS[name]()
    out = ex13.figures(tailruns.engine_run(rows), baseline)
    after = ex13.FOLLOW_UPS.get(name, [])
    out["after"] = [ex13.figures(tailruns.engine_run(rows, **s), baseline) for _, s in after]
    out["rows"] = rows
    return out


def overload_claims(lab, c: Claims, ov: dict, lt: dict, base: dict, recompute_waiting: float):
    """The overload run and its follow-ups (ex31_13.py, test_u09_ex31_13.py, the notebook's
    prose and build claims, the lesson), and 31.12's plan credits overload's waiting share."""
    measure = lab[0]
    c.claim(ov["cause"] == "overload" and ov["also"] == [], "overload: overload alone")
    cap, k16, k48 = ov["after"]
    c.claim(cap["rejected"]["num"] > 0 and cap["rejected"]["den"] == 60, "a cap rejects some")
    c.claim(cap["p99WaitMs"] < ov["p99WaitMs"] and cap["p99TtftMs"] < ov["p99TtftMs"], "cap cuts")
    c.claim(cap["cause"] == "overload", "a cap alone leaves overload")
    c.claim(k16["cause"] == "overload" and k48["cause"] == "none", "K = 16 is not enough, 48 is")
    c.claim(
        ov["queueHalves"][1] > measure.QUEUE_GROWTH * ov["queueHalves"][0]
        and ov["waiting"]["value"] > lt["waiting"]["value"]
        and ov["p99TtftMs"] > measure.TAIL_GROWTH * base["p99TtftMs"],
        "overload: the queue grows, waiting's share grows, the p99 TTFT grows",
    )
    c.claim(ov["amplification"]["num"] == ov["amplification"]["den"], "no recompute")
    c.claim(ov["waiting"]["value"] > recompute_waiting, "overload waits most: the plan credits it")


def long_claims(lab, c: Claims, lp: dict, base: dict):
    """The long-prompt run and its chunked follow-ups (the same sources)."""
    th = lab[0]
    c.claim(lp["cause"] == "prefill blocking decode" and lp["also"] == [], "long: blocking alone")
    c.claim(
        lp["p99ItlMs"] > th.ITL_GROWTH * lp["decodeOnlyMedianItlMs"]
        and lp["long_gaps_in_prefill"]["value"] >= th.BLOCKED_SHARE
        and lp["queueHalves"][1] < th.QUEUE_GROWTH * lp["queueHalves"][0] + 1,
        "long prompts: long gaps end in prefill steps, the queue does not grow",
    )
    c1, c2 = lp["after"]
    floor = max(base["p99WaitMs"], base["p99ItlMs"])
    c.claim(c2["p99ItlMs"] < c1["p99ItlMs"] < lp["p99ItlMs"], "smaller budgets lower the ITL")
    c.claim(lp["p99WaitMs"] < c1["p99WaitMs"] < c2["p99WaitMs"], "smaller budgets raise the wait")
    c.claim(
        c1["cause"] == "prefill blocking decode"
        and c1["p99ItlMs"] <= th.TAIL_GROWTH * base["p99ItlMs"]
        and c1["p99ItlMs"] > th.ITL_GROWTH * c1["decodeOnlyMedianItlMs"],
        "budget 512: the ITL within 2x the baseline's yet still blocking",
    )
    c.claim(
        c2["cause"] != "prefill blocking decode"
        and c2["p99ItlMs"] <= th.ITL_GROWTH * c2["decodeOnlyMedianItlMs"]
        and c2["p99ItlMs"] <= th.TAIL_GROWTH * base["p99ItlMs"]
        and c2["p99WaitMs"] > th.TAIL_GROWTH * floor,
        "budget 256: the ITL rule stops firing and the wait has grown",
    )


def slow_claims(lab, c: Claims, sc: dict, base: dict):
    """The slow-client run and its shorter pause deadline (the same sources)."""
    th, tailruns = lab[0], lab[1]
    c.claim(sc["cause"] == "slow clients", "slow clients: slow clients")
    slow = [r for r in sc["rows"] if r["readBytesPerS"] < tailruns.FAST_READ]
    c.claim(
        sc["paused"]["num"] == len(slow) < sc["paused"]["den"] and sc["rejected"]["num"] == 0,
        "every slow reader pauses, not every stream; nothing is rejected",
    )
    c.claim(
        sc["p99ItlMs"] > th.TAIL_GROWTH * base["p99ItlMs"]
        and sc["p99TtftMs"] < th.TAIL_GROWTH * base["p99TtftMs"],
        "slow clients: the ITL tail grows, the TTFT tail does not",
    )
    c.claim(sc["amplification"]["num"] == sc["amplification"]["den"], "no recompute")
    (deadline,) = sc["after"]
    c.claim(
        deadline["stalled"]["num"] > 0
        and deadline["paused"]["num"] > 0
        and deadline["cause"] == "slow clients"
        and deadline["p99ItlMs"] < sc["p99ItlMs"],
        "a 0.5 s deadline cancels stalled streams, lowers the ITL, still slow clients",
    )


def common_draws():
    """Every drawable light gap and pair of pattern shifts, in the course's file otherwise."""
    shifts = BUILDERS.TAILRUNS_SHIFTS
    for light in BUILDERS.TAILRUNS_DRAWS[("light", "everyMs")]:
        for shift in BUILDERS.TAILRUNS_DRAWS[("pattern", "shift")]:
            for baseline_shift in (s for s in shifts if s != shift):
                doc = copy.deepcopy(BUILDERS.tailruns())
                doc["light"]["everyMs"] = light
                doc["pattern"] = {"shift": shift, "baselineShift": baseline_shift}
                yield doc


def own_draws(doc: dict, name: str):
    """``doc`` with every drawable value of situation ``name``'s own fields."""
    fields = [f for part, f in BUILDERS.TAILRUNS_DRAWS if part == name]
    choices = [BUILDERS.TAILRUNS_DRAWS[(name, f)] for f in fields]
    for picked in itertools.product(*choices):
        yield copy.deepcopy(doc) | {name: dict(zip(fields, picked))}


def broken_claims(lab, doc: dict, recompute_waiting: float, draws=None) -> dict:
    """What breaks, by situation, with ``doc``'s light load and shifts and, for each other
    situation, ``doc``'s own values or (``draws``) every drawable one of them."""
    _, tailruns, ex13 = lab
    tailruns.values = lambda: doc
    baseline = tailruns.baseline_run()
    base = ex13.figures(baseline, baseline)
    lt = situation(lab, doc, "light", baseline)
    broken = {"light": [] if lt["cause"] == "none" else ["light: none"]}
    checks = {
        "overload": lambda c, s: overload_claims(lab, c, s, lt, base, recompute_waiting),
        "long prompts": lambda c, s: long_claims(lab, c, s, base),
        "slow clients": lambda c, s: slow_claims(lab, c, s, base),
    }
    for name, check in checks.items():
        for each in draws(doc, name) if draws else (doc,):
            claims = Claims()
            check(claims, situation(lab, each, name, baseline))
            if claims.broken:
                broken.setdefault(name, []).append((each[name], claims.broken))
    return {name: found for name, found in broken.items() if found}


def test_the_shipped_file_keeps_every_claim(lab, recompute_waiting):
    assert broken_claims(lab, BUILDERS.tailruns(), recompute_waiting) == {}


def test_every_drawable_value_keeps_every_claim(lab, recompute_waiting):
    """Each situation's runs depend on the light load's gap, the two shifts and its own
    values only, so every drawable combination is covered: each light gap and pair of shifts
    with each situation's every drawable value."""
    broken = {}
    for doc in common_draws():
        if found := broken_claims(lab, doc, recompute_waiting, own_draws):
            broken[json.dumps([doc["light"], doc["pattern"]])] = found
    assert not broken, broken


def test_a_draw_is_never_the_courses_requests():
    """The pattern's shift is never the course's, and the baseline's is another, so no
    situation's requests are the course's; the lab's own check accepts every draw."""
    for seed in range(200):
        pattern = BUILDERS.tailruns(seed=seed)["pattern"]
        assert 0 not in pattern.values() and pattern["shift"] != pattern["baselineShift"], seed


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{", "cannot be read as JSON"),
        (json.dumps({"light": {"everyMs": 400}}), "field 'overload' must be an object"),
    ],
)
def test_a_broken_file_is_one_error_naming_it(tmp_path, text, says):
    """Run as a student would: ``python3 ex31_13.py`` in a lab whose ``tailruns.json`` is
    broken prints one line naming the file and what is wrong, and exits 2."""
    lab = copy_lab(tmp_path / "lab", True, UNIT)
    (lab / "tailruns.json").write_text(text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-S", "ex31_13.py"], cwd=lab, capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith("exercises.py 31.13: error: ") and done.stderr.count("\n") == 1
    assert "tailruns.json: " in done.stderr and says in done.stderr, done.stderr
