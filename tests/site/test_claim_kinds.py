"""The claim kinds (grader/sitebuild/claimkinds.py) read what a sentence says and check it
against the run or the book. For each kind, a sentence the pages printed before (kept here
word for word, the mistake a reader found: issues #47 and #48) is rejected by its checker on the
real run's figures, and the sentence that replaced it passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import servesim
from markupsafe import Markup

from grader import reference
from grader.sitebuild import claimkinds
from grader.sitebuild.claims import BuildError, ClaimLog
from grader.sitebuild.plugins import load_module
from grader.units import LABS_DIR, load_unit


@pytest.fixture(scope="module")
def unit09():
    return load_unit("unit09")


@pytest.fixture(scope="module")
def u09_runs():
    return load_module(LABS_DIR / "unit09" / "lesson_runs.py")


@pytest.fixture(scope="module")
def buffer(unit09, u09_runs):
    return u09_runs.buffer(unit09)


def _lab_device(unit, name: str):
    doc = json.loads((Path(unit.lab_dir) / "devices" / f"{name}.json").read_text("utf-8"))
    return servesim.DeviceProfile.from_json(doc["device"], source=name)


# -- a step count (#47: 7.969 s is exactly one step before the fluid model's 8 s) ----------------

OLD_STEPS = "运行里暂停发生在 7.969 s，比流体模型的 8 s 早不到一步"
NEW_STEPS = "运行里暂停发生在 7.969 s，比流体模型的 8 s 正好早一步（31.25 ms）"


def test_steps_rejects_not_quite_a_step_when_it_is_exactly_one(buffer):
    pause = buffer["no_deadline"]["pauses_ms"][0][0]
    early = buffer["fill_s"] * 1000 - pause
    assert early == buffer["step_ms"]  # the run: exactly one step
    assert claimkinds.steps(OLD_STEPS, early, buffer["step_ms"])[0] is False
    assert claimkinds.steps(NEW_STEPS, early, buffer["step_ms"])[0] is True
    # and the other way round: half a step is "not quite one", not "exactly one"
    assert claimkinds.steps(OLD_STEPS, early / 2, buffer["step_ms"])[0] is True
    assert claimkinds.steps(NEW_STEPS, early / 2, buffer["step_ms"])[0] is False


def test_steps_ignores_an_ordinal_and_wants_a_count():
    with pytest.raises(BuildError, match="no step count"):
        claimkinds.steps("第 3 步里暂停", 10.0, 10.0)


# -- the shape of a curve (#47: Fig 09.1's pause is no plateau) ----------------------------------

OLD_SHAPE = "平台段是暂停：没有新事件进来，只在被读走。"
NEW_SHAPE = "暂停期间没有新事件进来，缓冲只被读走，占用从 63.875 KiB 一路下降到低水位 32 KiB"


def test_shape_rejects_a_plateau_where_the_buffer_drains(buffer):
    pause, resume = buffer["no_deadline"]["pauses_ms"][0]
    curve = buffer["free_curve"]
    assert claimkinds.shape(OLD_SHAPE, curve, pause, resume)[0] is False
    assert claimkinds.shape(NEW_SHAPE, curve, pause, resume)[0] is True
    # a flat stretch would be a plateau: the checker tells them apart
    flat = [(pause, 10.0), (resume, 10.0)]
    assert claimkinds.shape(OLD_SHAPE, flat, pause, resume)[0] is True
    assert claimkinds.shape(NEW_SHAPE, flat, pause, resume)[0] is False


# -- "once" / 仍然占着 (#47: a shared page is stored once) ----------------------------------------

OLD_SHARING = "命中省下的是 prefill 的计算，不是页：命中的页仍然占着池，只是由多个序列共同持有。"
NEW_SHARING = (
    "如果命中的页此刻还有别的序列持有，它在池里也只存一份：多一个持有者只是多一个页表项，"
    "不多占页（式 31.5 里共享前缀只计一次）"
)


def test_sharing_rejects_hits_that_cost_pages(unit09):
    from grader.sitebuild.runs import device

    trace = reference.load_trace(unit09, "shared-prefix")
    run = reference.run_reference(unit09, trace, "prefix_admit", {"budget": 128}, device(unit09))
    pages, entries = claimkinds.pages_held(run["events"])
    assert pages <= device(unit09).kv_pages < entries  # shared pages are held once
    assert claimkinds.sharing(OLD_SHARING, pages, entries)[0] is False
    assert claimkinds.sharing(NEW_SHARING, pages, entries)[0] is True
    # without a prefix cache every entry is its own page: then the old words would hold
    plain = reference.run_reference(unit09, trace, "cancel_aware", {"budget": 128}, device(unit09))
    pages, entries = claimkinds.pages_held(plain["events"])
    assert pages == entries
    assert claimkinds.sharing(OLD_SHARING, pages, entries)[0] is True
    assert claimkinds.sharing(NEW_SHARING, pages, entries)[0] is False


# -- "only" / "at least" against the bound computed (#48 item 6: the union bound) --------------

OLD_BOUND = "即 300 ms 覆盖到的只是 98%。"
OLD_BOUND_EXERCISE = "300 ms 只是 98% 的覆盖上界。"
NEW_BOUND = "即 300 ms 覆盖到的请求至少占 98%"


def test_bound_rejects_only_for_a_lower_bound():
    queues = load_module(LABS_DIR / "unit07" / "chapter31_queues.py")
    un = queues.union_bound()
    # the bound computed: P(X + Y <= 300) >= 1 - (0.01 + 0.01): a lower bound on the coverage
    assert un["sum_ms"] == 300 and float(un["coverage"]) == pytest.approx(0.98)
    direction = "lower"
    assert claimkinds.bound(OLD_BOUND, direction)[0] is False
    assert claimkinds.bound(OLD_BOUND_EXERCISE, direction)[0] is False
    assert claimkinds.bound(NEW_BOUND, direction)[0] is True
    assert claimkinds.bound(NEW_BOUND, "upper")[0] is False


# -- who is doing what at a stated time (#48 item 1: lifo-victim at 30 ms) ----------------------

OLD_DOING = "A、B 各有 250 个 token 的提示，正在 decode；L 的提示有 500 个 token，30.00 ms 到达"
NEW_DOING = "L 在 30.00 ms 到达时，A 在 decode，B 的提示还在分块 prefill"


def test_doing_rejects_b_decoding_while_it_still_prefills():
    unit = load_unit("unit08")
    trace = reference.load_trace(unit, "lifo-victim")
    run = reference.run_reference(
        unit, trace, "paged", {"budget": 64}, _lab_device(unit, "kv-64-pages")
    )
    events = run["events"]
    at = next(r["arrivalMs"] for r in run["requests"] if r["id"] == "L")
    assert claimkinds.doing(OLD_DOING, events, at, decode=["A", "B"])[0] is False
    assert claimkinds.doing(NEW_DOING, events, at, decode=["A"], prefill=["B"])[0] is True
    with pytest.raises(BuildError, match="does not"):  # a claim about an id its text never names
        claimkinds.doing("A 在 decode", events, at, decode=["A"], prefill=["B"])


# -- a quoted constant and the device it holds on (#48 item 4: 71.40 ms) -------------------------

OLD_CONSTANT = (
    "上下文为 0 时，在用满 B = 512 且含 decode 的步里，时长最长的是只带 1 条 decode 序列的那种："
    "0.25 + 511 × 0.1 + 20 + 0.05 = 71.40 ms"
)
NEW_CONSTANT = (
    "先不计上下文项：在用满 B = 512 且含 decode 的步里，时长最长的是只带 1 条 decode 序列的那种："
    "0.25 + 511 × 0.1 + 20 + 0.05 = 71.40 ms"
)


def test_constant_rejects_a_figure_that_does_not_hold_on_the_device_it_is_about():
    unit = load_unit("unit08")
    dev = _lab_device(unit, "long-context")
    budget = 512
    no_context = dev.overhead_ms + (budget - 1) * dev.prefill_ms_per_token
    no_context += dev.decode_batch_ms + dev.decode_ms_per_seq
    pairs = (budget - 1) * budget // 2  # eq. 31.4 at s = 0
    long_context = no_context + pairs * dev.prefill_ms_per_context_token
    assert round(no_context, 2) == 71.40 and round(long_context, 2) == 72.05
    by_device = {"不计上下文项": no_context, "long-context": long_context}
    assert claimkinds.constant(OLD_CONSTANT, no_context, by_device)[0] is False
    assert claimkinds.constant(NEW_CONSTANT, no_context, by_device)[0] is True
    # a figure that holds on every device needs no device named
    assert claimkinds.constant(OLD_CONSTANT, no_context, {"a": no_context, "b": no_context})[0]


# -- the build path: a false kind stops the build, a true one is marked checked -----------------


def test_the_kind_filter_stops_the_build_on_the_old_sentence(buffer):
    log = ClaimLog(page="unit09/index.html", kinds=claimkinds.KINDS)
    pause = buffer["no_deadline"]["pauses_ms"][0][0]
    early = buffer["fill_s"] * 1000 - pause
    with pytest.raises(BuildError, match="steps"):
        log.kind(Markup(OLD_STEPS), "steps", early, buffer["step_ms"])
    html = log.kind(Markup(NEW_STEPS), "steps", early, buffer["step_ms"])
    assert 'data-checked="steps:' in html and NEW_STEPS in html
    with pytest.raises(BuildError, match="no claim kind"):
        log.kind("text", "nonsense")


def test_the_built_pages_use_every_kind(built_site):
    _, report = built_site
    used = {message.split(":")[0] for _, message in report.claims}
    assert set(claimkinds.KINDS) <= used
