"""Issue 50, exercise 31.13: a student's own ``tailruns.json`` (``public_traces.tailruns``)
keeps every situation's built-in cause and what every follow-up, the notebook's prose and the
lesson say of the runs, on 200 draws (seeds 0-199), and a broken file is one error line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import servesim
from labtools import copy_lab

from grader import reference
from grader.plugins import load_file
from grader.units import load_unit

UNIT = load_unit("unit09")
BUILDERS = load_file(UNIT.unit_dir / "public_traces.py")
KEYS = load_file(UNIT.unit_dir / "notebook" / "answer_keys.py")
SEEDS = range(200)


@pytest.fixture(scope="module")
def recompute_waiting() -> float:
    """The largest waiting share of 31.12's recompute run (the reference ``cancel_aware`` on
    ``evict``, which a student draws too) over the shipped ``evict`` and 200 draws of it."""
    spec = KEYS.SETUP.D2["recompute"]
    device = KEYS._device_file(UNIT, spec["device"])
    policy = next(p for p in UNIT.policies if p["name"] == spec["policy"])
    params = {name: meta["default"] for name, meta in policy.get("params", {}).items()}
    measure = load_file(UNIT.solutions_dir / "measure.py")
    worst = 0.0
    for seed in (None, *SEEDS):
        doc = getattr(BUILDERS, spec["trace"])(seed=seed)
        trace = servesim.parse_trace(json.loads(json.dumps(doc)), source=f"seed {seed}")
        run = reference.run_reference(UNIT, trace, spec["policy"], params, device)
        worst = max(worst, measure.waiting_share(run).value)
    return worst


@pytest.fixture(scope="module")
def lab():
    """The lab's ``tailruns`` and ``ex31_13`` with the reference ``measure.py``."""
    with KEYS.lab_modules(UNIT) as (measure, tailruns, _, ex13):
        yield measure, tailruns, ex13


def broken_claims(lab, doc: dict, recompute_waiting: float) -> list[str]:
    """What no longer holds when the situations are ``doc``'s: the causes, the follow-ups
    (ex31_13.py, tests/unit09/test_u09_ex31_13.py, the notebook's prose and build claims),
    the 31.12 plan's credit for the two tailruns runs (overload's waiting share above
    ``recompute_waiting``, the recompute run's), and the lesson's tail claims."""
    measure, tailruns, ex13 = lab
    tailruns.values = lambda: doc
    result = ex13.exercise()
    s = {entry["name"]: entry for entry in result["situations"]}
    baseline = tailruns.baseline_run()
    base = ex13.figures(baseline, baseline)
    lt, ov, lp, sc = s["light"], s["overload"], s["long prompts"], s["slow clients"]
    th = measure
    broken = []

    def claim(holds: bool, what: str) -> None:
        if not holds:
            broken.append(what)

    claim(lt["cause"] == "none", "light: none")
    claim(ov["cause"] == "overload" and ov["also"] == [], "overload: overload alone")
    claim(lp["cause"] == "prefill blocking decode" and lp["also"] == [], "long: blocking alone")
    claim(sc["cause"] == "slow clients", "slow clients: slow clients")
    cap, k16, k48 = ov["after"]
    claim(cap["rejected"]["num"] > 0 and cap["rejected"]["den"] == 60, "a cap rejects some")
    claim(cap["p99WaitMs"] < ov["p99WaitMs"] and cap["p99TtftMs"] < ov["p99TtftMs"], "cap cuts")
    claim(cap["cause"] == "overload", "a cap alone leaves overload")
    claim(k16["cause"] == "overload" and k48["cause"] == "none", "K = 16 is not enough, 48 is")
    claim(
        ov["queueHalves"][1] > th.QUEUE_GROWTH * ov["queueHalves"][0]
        and ov["waiting"]["value"] > lt["waiting"]["value"]
        and ov["p99TtftMs"] > th.TAIL_GROWTH * base["p99TtftMs"],
        "overload: the queue grows, waiting's share grows, the p99 TTFT grows",
    )
    claim(
        lp["p99ItlMs"] > th.ITL_GROWTH * lp["decodeOnlyMedianItlMs"]
        and lp["long_gaps_in_prefill"]["value"] >= th.BLOCKED_SHARE
        and lp["queueHalves"][1] < th.QUEUE_GROWTH * lp["queueHalves"][0] + 1,
        "long prompts: long gaps end in prefill steps, the queue does not grow",
    )
    c1, c2 = lp["after"]
    floor = max(base["p99WaitMs"], base["p99ItlMs"])
    claim(c2["p99ItlMs"] < c1["p99ItlMs"] < lp["p99ItlMs"], "smaller budgets lower the ITL")
    claim(lp["p99WaitMs"] < c1["p99WaitMs"] < c2["p99WaitMs"], "smaller budgets raise the wait")
    claim(
        c1["cause"] == "prefill blocking decode"
        and c1["p99ItlMs"] <= th.TAIL_GROWTH * base["p99ItlMs"]
        and c1["p99ItlMs"] > th.ITL_GROWTH * c1["decodeOnlyMedianItlMs"],
        "budget 512: the ITL within 2x the baseline's yet still blocking",
    )
    claim(
        c2["cause"] != "prefill blocking decode"
        and c2["p99ItlMs"] <= th.ITL_GROWTH * c2["decodeOnlyMedianItlMs"]
        and c2["p99ItlMs"] <= th.TAIL_GROWTH * base["p99ItlMs"]
        and c2["p99WaitMs"] > th.TAIL_GROWTH * floor,
        "budget 256: the ITL rule stops firing and the wait has grown",
    )
    slow = [r for r in tailruns.SITUATIONS["slow clients"]() if r["readBytesPerS"] < 1e6]
    claim(
        sc["paused"]["num"] == len(slow) < sc["paused"]["den"] and sc["rejected"]["num"] == 0,
        "every slow reader pauses, not every stream; nothing is rejected",
    )
    claim(
        sc["p99ItlMs"] > th.TAIL_GROWTH * base["p99ItlMs"]
        and sc["p99TtftMs"] < th.TAIL_GROWTH * base["p99TtftMs"],
        "slow clients: the ITL tail grows, the TTFT tail does not",
    )
    (deadline,) = sc["after"]
    claim(
        deadline["stalled"]["num"] > 0
        and deadline["paused"]["num"] > 0
        and deadline["cause"] == "slow clients"
        and deadline["p99ItlMs"] < sc["p99ItlMs"],
        "a 0.5 s deadline cancels stalled streams, lowers the ITL, still slow clients",
    )
    runs = {c: tailruns.engine_run(tailruns.SITUATIONS[c]()) for c in ("overload", "slow clients")}
    figures = {cause: KEYS.shares(measure, run) for cause, run in runs.items()}
    claim(
        all(
            f["prefill_amplification"][0] == f["prefill_amplification"][1] for f in figures.values()
        ),
        "the tailruns runs recompute nothing",
    )
    waiting = figures["overload"]["waiting_share"]
    claim(waiting[0] / waiting[1] > recompute_waiting, "overload waits most: the plan credits it")
    return broken


def test_the_shipped_file_keeps_every_claim(lab, recompute_waiting):
    assert broken_claims(lab, BUILDERS.tailruns(), recompute_waiting) == []


def test_every_draw_keeps_every_claim(lab, recompute_waiting):
    broken = {}
    for seed in SEEDS:
        doc = BUILDERS.tailruns(seed=seed)
        shifts = (doc["pattern"]["shift"], doc["pattern"]["baselineShift"])
        assert 0 not in shifts and shifts[0] != shifts[1], seed  # never the course's requests
        if found := broken_claims(lab, doc, recompute_waiting):
            broken[seed] = (doc, found)
    assert not broken, broken


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
