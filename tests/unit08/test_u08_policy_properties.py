"""Properties of the unit 08 reference policies on random traces and devices (hypothesis)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from u08tools import cache_after_steps, device, make_trace, measure, pages, run08

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
POLICIES = ["static", "continuous", "budgeted", "paged", "fair", "admit"]
SLOT_POLICIES = {"static", "continuous"}  # whole prompts into K slots: no page pool


@st.composite
def requests(draw, deadlines=False, max_size=12, crowded=False):
    """Random traces; ``crowded`` ones (short prompts arriving together, long outputs) make a
    small page pool overflow while decoding, so ``paged`` has to preempt."""
    count = draw(st.integers(2 if crowded else 1, max_size))
    out = []
    for k in range(count):
        output = draw(st.integers(10, 40) if crowded else st.integers(1, 40))
        item = {
            "id": f"r{k}",
            "arrivalMs": draw(st.integers(0, 20 if crowded else 400)) / 2,
            "inputTokens": draw(st.integers(1, 8 if crowded else 48)),
            "outputTokens": output,
            "maxOutputTokens": output + draw(st.integers(0, 16)),
            "tenant": draw(st.sampled_from(["a", "b", "c"])),
        }
        if deadlines and draw(st.booleans()):
            item["deadlineMs"] = draw(st.integers(1, 80))
        out.append(item)
    return make_trace(out)


@st.composite
def setups(draw, policy, crowded=False):
    cap = draw(st.one_of(st.none(), st.integers(1, 6)))
    pools = st.integers(10, 16) if crowded else st.one_of(st.none(), st.integers(4, 24))
    pool = None if policy in SLOT_POLICIES else draw(pools)
    dev = device(
        prefill_ms_per_token=draw(st.sampled_from([0.0, 0.25, 1.0])),
        decode_batch_ms=draw(st.sampled_from([0.5, 2.0])),
        decode_ms_per_seq=draw(st.sampled_from([0.0, 0.5])),
        overhead_ms=draw(st.sampled_from([0.0, 0.25])),
        max_active=cap,
        kv_pages=pool,
        page_tokens=4,
    )
    budget = draw(st.integers(max(cap or 1, 1), 96))
    return dev, budget


def run_any(trace, policy, dev, budget, **limits):
    params = {"budget": budget} if policy not in SLOT_POLICIES else {}
    return run08(trace, policy, dev, **limits, **params)


def check_no_deadlock_and_limits(run, dev):
    for req in run["requests"]:
        assert req["status"] in ("completed", "rejected"), f"{req['id']}: {req['status']}"
        if req["status"] == "completed":
            assert len(req["tokenTimesMs"]) == req["outputTokens"], f"{req['id']} lost tokens"
    for index, cache in enumerate(cache_after_steps(run)):
        if dev.max_active is not None:
            assert len(cache) <= dev.max_active, f"step {index}: K exceeded"
        if dev.kv_pages is not None:
            assert pages(cache, dev.page_tokens) <= dev.kv_pages, f"step {index}: M exceeded"


def _no_deadlock(policy):
    @SETTINGS
    @given(trace=requests(), setup=setups(policy))
    def test(trace, setup):
        dev, budget = setup
        check_no_deadlock_and_limits(run_any(trace, policy, dev, budget), dev)

    test.__name__ = f"test_{policy}_never_deadlocks"
    return test


for _policy in POLICIES:
    globals()[f"test_{_policy}_never_deadlocks"] = _no_deadlock(_policy)


@SETTINGS
@given(trace=requests(crowded=True), setup=setups("paged", crowded=True))
def test_paged_preempts_without_deadlock_or_double_tokens(trace, setup):
    dev, budget = setup
    run = run_any(trace, "paged", dev, budget)
    check_no_deadlock_and_limits(run, dev)
    for req in run["requests"]:
        times = req["tokenTimesMs"]
        assert all(a < b for a, b in zip(times, times[1:])), f"{req['id']}: a token twice"


def test_crowded_traces_do_preempt():
    """The strategy above is not vacuous: most crowded examples make paged preempt. The draws
    are fixed (``derandomize``): with fresh random ones each run, 30 examples gave 10 to 26
    preemptions over 12 seeds, and 5 once, which failed a whole-suite run."""
    found = []

    @settings(max_examples=100, deadline=None, database=None, derandomize=True)
    @given(trace=requests(crowded=True), setup=setups("paged", crowded=True))
    def sample(trace, setup):
        found.append(run_any(trace, "paged", *setup)["summary"]["recomputes"] > 0)

    sample()
    assert sum(found) >= len(found) // 3, f"only {sum(found)} of {len(found)} preempted"


@SETTINGS
@given(
    trace=requests(deadlines=True),
    setup=setups("paged"),
    policy=st.sampled_from(["budgeted", "paged", "admit"]),
    queue_cap=st.one_of(st.none(), st.integers(1, 3)),
)
def test_rejected_and_cancelled_are_in_every_denominator(trace, setup, policy, queue_cap):
    dev, budget = setup
    run = run_any(trace, policy, dev, budget, queue_cap=queue_cap)
    reqs, summary = run["requests"], run["summary"]
    assert len(reqs) == len(trace.requests) == summary["requests"]
    assert summary["completed"] + summary["rejected"] + summary["cancelled"] == len(reqs)
    end = max(r["statusMs"] for r in reqs) + 1
    report = measure.goodput(reqs, measure.Slo(), 0.0, end)
    assert report.submitted == len(trace.requests)
    assert report.qualifying == summary["completed"]
    law = measure.little(reqs, 0.0, end)
    assert (
        law.area_ms == law.clipped_residence_ms
        or abs(law.area_ms - law.clipped_residence_ms) < 1e-6
    )


@SETTINGS
@given(trace=requests(max_size=10), setup=setups("budgeted"))
def test_budgeted_never_delays_a_decode_when_the_budget_is_ample(trace, setup):
    """With B >= every prompt (and >= the number of requests) and no K or M, every running
    request is decoded in every step."""
    dev, _ = setup
    dev = device(prefill_ms_per_token=dev.prefill_ms_per_token, max_active=None, kv_pages=None)
    budget = max(*(r.input_tokens for r in trace.requests), len(trace.requests))
    run = run_any(trace, "budgeted", dev, budget)
    for event in run["events"]:
        running = {
            r["id"]
            for r in run["requests"]
            if r["tokenTimesMs"] and r["tokenTimesMs"][0] <= event["startMs"] < r["statusMs"]
        }
        assert running <= set(event["decode"]), (
            f"step {event['index']}: {running - set(event['decode'])} not decoded"
        )
