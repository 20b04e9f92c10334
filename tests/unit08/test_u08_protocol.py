"""Unit 08's experimental protocol: one measurement window everywhere, independent
replications, intervals that cover on cases with a known answer, verdicts that are rarely
wrong, and the command lines that run a protocol."""

from __future__ import annotations

import json
import random
import re

import jsonschema
import pytest
from u08tools import UNIT08, copy_lab08, lab_python, measure

from grader import casekinds
from grader.cases import Kind, load_grading
from grader.course.golden import golden_path
from grader.units import REPO_ROOT

PROTOCOLS = UNIT08.lab_dir / "protocols"


def protocol_schema() -> dict:
    path = UNIT08.lab_dir / "schemas" / "protocol.schema.json"
    return json.loads(path.read_text(encoding="utf-8"))


# -- the window -------------------------------------------------------------------------------


def test_window_leaves_out_warm_up_and_cool_down_by_arrival():
    from servesim.protocol import measurement_window

    arrivals = [50.0, 0.0, 10.0, 30.0, 20.0, 40.0]  # any order: the window sorts them
    window = measurement_window(arrivals, 2, 1)
    assert (window.start_ms, window.end_ms) == (20.0, 50.0)
    records = [{"arrivalMs": a} for a in arrivals]
    assert sorted(r["arrivalMs"] for r in window.select(records)) == [20.0, 30.0, 40.0]
    assert window.length_s == 0.03
    graded = measurement_window(arrivals, 0, 1)  # a graded trace: first to last arrival
    assert (graded.start_ms, graded.end_ms) == (0.0, 50.0)


@pytest.mark.parametrize(
    ("arrivals", "warmup", "cooldown", "words"),
    [
        ([0.0, 1.0, 2.0], 2, 1, "leave no window"),
        ([5.0, 5.0, 5.0], 0, 1, "is empty"),
        ([0.0, 1.0, 2.0], 0, 0, "cool-down >= 1"),
    ],
)
def test_window_refuses_runs_that_leave_none(arrivals, warmup, cooldown, words):
    from servesim.protocol import WindowError, measurement_window

    with pytest.raises(WindowError, match=words):
        measurement_window(arrivals, warmup, cooldown)


def test_graded_goodput_uses_the_same_window_as_measure():
    """The challenge's score and measure.goodput agree on every goodput case's reference run."""
    from servesim.protocol import measurement_window

    grading = load_grading(UNIT08)
    cases = [c for c in grading.cases if c.kind is Kind.GOODPUT]
    assert cases
    for case in cases:
        run = json.loads(golden_path(UNIT08, case).read_text(encoding="utf-8"))["run"]
        score = casekinds.goodput_score(run["requests"], case.slo)
        window = measurement_window([r["arrivalMs"] for r in run["requests"]], 0, 1)
        slo = measure.Slo(ttft_ms=case.slo.get("ttftMs"), tpot_ms=case.slo.get("tpotMs"))
        mine = measure.goodput(run["requests"], slo, window.start_ms, window.end_ms)
        assert score.qualifying == mine.qualifying > 0, case.id
        assert score.goodput_per_s == pytest.approx(mine.goodput_per_s), case.id


# One window everywhere: every place that measures goodput or attainment goes through the shared
# function (directly, or through measure.replication, experiment.replicate or Protocol.window,
# which call it), and no other window rule survives in the code, the docs, the handout or the
# lesson.
CODE = [
    "grader/casekinds.py",
    "solutions/unit08/measure.py",
    "starter/unit08/measure.py",
    "starter/unit08/experiment.py",
    "starter/unit08/simulate.py",
    "servesim/cli.py",
    "labs/unit08/lesson_jobs.py",
    "labs/unit08/notebook/answer_keys.py",
    "labs/unit08/notebook/cells.py",
    "labs/unit08/notebook/cells_load.py",
]
PROSE = {
    "starter/unit08/README.md": ["measurement_window", "[start, end)", "预热", "冷却"],
    "labs/unit08/lesson.html.j2": [
        "测量窗口全课统一定义",
        "同一个函数",
        "左闭右开",
        "预热",
        "冷却",
    ],
    "docs/grading.md": ["measurement_window", "[first arrival,", "by arrival"],
    "grader/casekinds.py": ["measurement_window", "[start, end)"],
    "servesim/protocol.py": ["[start, end)", "warm-up", "cool-down"],
}
OLD_RULES = [
    r"nextafter\(",  # 0 to just after the last departure: the old sweep's window
    r"arrival_span",  # first to last arrival, every request counted: the old challenge's
    r"第一个到最后一个到达之间的时长",
    r"last arrival - first arrival",
    r"max\(r\[\"statusMs\"\][^)]*\)\s*$",
]
DEMONSTRATION = "(the old window)"  # the lesson reruns the old rule on purpose, marked so


def test_one_window_everywhere():
    for name in CODE:
        text = (REPO_ROOT / name).read_text(encoding="utf-8")
        uses = ("measurement_window", "measure.replication(", "protocol.window(", ".window(")
        uses += ("experiment.replicate(",)  # measure.replication under the protocol's window
        assert any(u in text for u in uses), f"{name} measures without the shared window"
    for name, phrases in PROSE.items():
        text = (REPO_ROOT / name).read_text(encoding="utf-8")
        for phrase in phrases:
            assert phrase in text, f"{name} does not state the window rule ({phrase!r})"
    callers = ["starter/unit08/sweep.py", "labs/unit08/site_context.py"]
    callers += [f"labs/unit08/{n}.py" for n in ("lesson_constructions", "lesson_protocol_runs")]
    callers += ["labs/unit08/lesson_text.py", "labs/unit08/lesson_figures.py"]
    callers += ["labs/unit08/notebook/cells_sweep.py", "labs/unit08/notebook/setup_cell.py"]
    for name in sorted({*CODE, *PROSE, *callers}):
        for number, line in enumerate((REPO_ROOT / name).read_text().splitlines(), start=1):
            if DEMONSTRATION in line:
                continue
            for rule in OLD_RULES:
                assert not re.search(rule, line), f"{name}:{number}: another window: {line!r}"


# -- the textbook's definitions ---------------------------------------------------------------


def test_textbook_example_succeeded_is_completed_whatever_the_quality():
    from grader.plugins import load_file

    constructions = load_file(UNIT08.unit_dir / "lesson_constructions.py")
    got = constructions.chapter_example(measure)
    assert (got.submitted, got.succeeded, got.qualifying) == (1000, 850, 700)
    assert (got.submitted_per_s, got.succeeded_per_s, got.goodput_per_s) == (10, 8.5, 7)
    assert got.attainment_over_submitted == 0.7
    assert got.attainment_over_succeeded == pytest.approx(700 / 850)


# -- replications -----------------------------------------------------------------------------


def test_replications_draw_their_own_arrivals_sizes_and_quality():
    from servesim.protocol import load_protocol

    from grader import reference

    protocol = load_protocol(PROTOCOLS / "lesson.json")
    sizes = reference.load_trace(UNIT08, protocol.sizes)
    one, _ = protocol.workload(sizes, 4, protocol.seeds[0])
    two, _ = protocol.workload(sizes, 4, protocol.seeds[1])
    ids = [r.id for r in one.requests]
    assert len(set(ids)) == len(ids) == protocol.requests_per_run
    assert [r.arrival_ms for r in one.requests] != [r.arrival_ms for r in two.requests]
    assert [r.input_tokens for r in one.requests] != [r.input_tokens for r in two.requests]
    draws = [
        [measure.quality_passes(i, "small-int8", 0.88, seed) for i in ids]
        for seed in protocol.seeds
    ]
    assert len({tuple(d) for d in draws}) == len(draws)
    again, _ = protocol.workload(sizes, 4, protocol.seeds[0])
    assert again.raw == one.raw  # a replication is reproducible


def test_bursty_arrivals_keep_the_mean_rate():
    from servesim.load import Burst, open_loop

    from grader import reference

    sizes = reference.load_trace(UNIT08, "azure-conv-slice")
    burst = Burst(factor=3.0, fraction=0.2, period_ms=10_000.0)
    trace = open_loop(sizes, 5.0, 20_000, 7, burst)
    arrivals = [r.arrival_ms for r in trace.requests]
    assert len(arrivals) / (arrivals[-1] / 1000) == pytest.approx(5.0, rel=0.03)
    in_burst = sum(1 for a in arrivals if a % 10_000 < 2_000) / len(arrivals)
    assert in_burst == pytest.approx(0.6, abs=0.02)  # 3 x 0.2 of the arrivals in 20 % of time


# -- intervals and verdicts on cases with a known answer ---------------------------------------


def _pass_shares(rng: random.Random, rate: float, requests: int, replications: int) -> list:
    """Per replication: the share of ``requests`` ids that pass a quality check of ``rate``
    drawn with that replication's seed (the known long-run answer is ``rate``)."""
    ids = [f"o{k}" for k in range(1, requests + 1)]
    shares = []
    for _ in range(replications):
        seed = rng.randrange(2**31)
        shares.append(sum(measure.quality_passes(i, "t", rate, seed) for i in ids) / requests)
    return shares


def test_interval_covers_a_known_pass_rate_about_95_percent_of_the_time():
    rng = random.Random(19)
    trials, covered = 400, 0
    for _ in range(trials):
        figure = measure.interval(_pass_shares(rng, 0.88, 300, 5), 0.95)
        covered += figure.low <= 0.88 <= figure.high
    assert 0.92 <= covered / trials <= 0.98, covered / trials


def test_verdicts_are_rarely_wrong_on_known_attainment():
    """Feasible when the truth is below the target, or infeasible when above, in <= 5 % of
    cells; the rest are right or honestly not yet known."""
    rng = random.Random(20)
    target = measure.Target("attainment", 0.9)
    wrong = cells = 0
    for truth in (0.86, 0.88, 0.89, 0.895, 0.905, 0.91, 0.92, 0.94):
        for _ in range(60):
            figure = measure.interval(_pass_shares(rng, truth, 400, 5), 0.95)
            outcome = measure.verdict([(figure, target)], True).outcome
            cells += 1
            wrong += (outcome == measure.FEASIBLE and truth < 0.9) or (
                outcome == measure.INFEASIBLE and truth > 0.9
            )
    assert wrong / cells <= 0.05, wrong / cells


# -- the files and the command lines ----------------------------------------------------------


def test_shipped_protocols_are_valid_by_schema_and_parser():
    from servesim.protocol import load_protocol

    schema = protocol_schema()
    for path in sorted(PROTOCOLS.glob("*.json")):
        jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), schema)
        protocol = load_protocol(path)
        assert protocol.to_json() == json.loads(json.dumps(protocol.to_json()))
    lesson = load_protocol(PROTOCOLS / "lesson.json")
    tiers = list((UNIT08.lab_dir / "tiers").glob("*.json"))
    assert len(tiers) >= 4 and len(lesson.loads) >= 6
    assert len(lesson.seeds) >= 5 and lesson.requests_per_run >= 2000


@pytest.mark.parametrize(
    "change",
    [
        {"seeds": [1]},
        {"seeds": [2, 2]},
        {"cooldownRequests": 0},
        {"confidence": 1.0},
        {"colour": "red"},
        {"loads": []},
        {
            "workload": {"sizes": "x", "arrivals": {"process": "closed", "thinkMs": 5}},
            "loads": [1.5],
        },
    ],
)
def test_schema_and_parser_refuse_the_same_protocols(change):
    from servesim.protocol import ProtocolError, parse_protocol

    doc = {**json.loads((PROTOCOLS / "lesson.json").read_text(encoding="utf-8")), **change}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, protocol_schema())
    with pytest.raises(ProtocolError):
        parse_protocol(doc)


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    return copy_lab08(tmp_path_factory.mktemp("lab") / "unit08", solution=True)


def test_a_closed_loop_with_exponential_think_time_is_one_command(solved):
    done = lab_python(
        solved,
        *("simulate.py", "--protocol", "protocols/closed-loop.json"),
        *("--tier", "tiers/small-paged.json", "--requests", "400", "--output", "runs/c.json"),
    )
    assert done.returncode == 0, done.stderr
    assert "window [" in done.stdout and "goodput" in done.stdout
    from servesim.compact import expand_document, is_compact

    doc = expand_document(json.loads((solved / "runs" / "c.json").read_text(encoding="utf-8")))
    (run,), trace = doc["runs"], doc["trace"]
    assert "exponential" in trace["description"] and len(run["requests"]) == 400
    stored = json.loads((solved / "runs" / "c.json").read_text(encoding="utf-8"))["runs"][0]
    assert is_compact(stored)  # the header counts requests, not the compact entry's columns
    assert re.search(r"^trace [^:]+: 400 requests,", done.stdout, re.M), done.stdout
    assert "of 400 requests" in done.stdout
    flag = lab_python(
        solved,
        *("simulate.py", "--trace", "azure-conv-slice", "--policy", "paged"),
        *("--load", "closed:8:500:exponential", "--requests", "50"),
    )
    assert flag.returncode == 0, flag.stderr


def test_the_sweep_prints_intervals_verdicts_and_the_choice(solved):
    done = lab_python(
        solved,
        *("sweep.py", "--protocol", "protocols/lesson.json", "--requests", "400"),
        *("--replications", "2", "--loads", "1.5,10", "--jobs", "2", "--out", "plots"),
        *("--tiers", "tiers/small-int8.json", "tiers/small-paged.json"),
    )
    assert done.returncode == 0, done.stderr
    assert "不是协议的答案" in done.stdout and "±" in done.stdout
    assert re.search(r"^small-paged\s+10 不可行", done.stdout, re.M), done.stdout
    assert "还需 = " in done.stdout  # the table's legend explains its columns
    assert "cheapest feasible tier:" in done.stdout
    assert "\r" not in done.stderr  # progress only on a terminal, never in a log
    for name in ("goodput.svg", "attainment.svg", "p99-ttft.svg"):
        svg = (solved / "plots" / name).read_text(encoding="utf-8")
        assert svg.startswith("<svg") and "small-int8" in svg and "置信区间" in svg
        assert "提供负载 (请求/s)" in svg  # labelled as the lesson page labels its charts
    p99 = (solved / "plots" / "p99-ttft.svg").read_text(encoding="utf-8")
    assert "p99 TTFT (s)" in p99 and "TTFT 目标 2 s" in p99  # the protocol's SLO, in seconds
    attainment = (solved / "plots" / "attainment.svg").read_text(encoding="utf-8")
    labels = [float(v) for v in re.findall(r'text-anchor="end">([0-9.]+)</text>', attainment)]
    assert max(labels) == 100, f"the attainment axis ends at {max(labels)} %, not at 100 %"
    again = lab_python(solved, *done.args[2:])
    assert again.returncode == 0 and "plots-2" in again.stdout, again.stdout[-500:]
    assert (solved / "plots-2" / "goodput.svg").is_file()  # the first sweep's charts stay


def test_figures_cut_error_bars_to_the_values_a_figure_can_take():
    """The t interval is symmetric: with a mean near 100 % it reaches past 100 %, and with a
    goodput near 0 below 0. The lesson's charts draw it cut to what the figure can take."""
    from types import SimpleNamespace as NS

    from grader.plugins import load_file

    figures = load_file(UNIT08.unit_dir / "lesson_figures.py")
    figure = NS(mean=0.97, low=0.91, high=1.03)
    low_goodput = NS(mean=0.2, low=-0.1, high=0.5)
    cell = NS(tier="t", load=1.0, figures={"attainment": figure, "goodput": low_goodput})
    sweep = {"tiers": [NS(name="t")], "cells": [cell]}
    (attainment,) = figures._series(sweep, "attainment", 100, most=100.0)
    assert attainment.errors == [(pytest.approx(91.0), 100.0)]
    assert attainment.points == [(1.0, pytest.approx(97.0))]
    (goodput,) = figures._series(sweep, "goodput")
    assert goodput.errors == [(0.0, 0.5)]
