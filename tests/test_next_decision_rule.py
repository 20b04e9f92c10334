"""The next decision-point rule is one component too: a rule no unit has (an operator evicts
one tenant's requests at the first decision point at or after a set time) is registered with
its hook on its own part, and the engine and the trusted replay both fire it in the
components' order, with neither edited for it; the replay holds the run's statuses against it
and names a run that does not report the eviction."""

from __future__ import annotations

import copy

import componenttools
import pytest
from componenttools import greedy
from servesim import DeviceProfile, Status, components, parse_trace, simulate
from servesim.decision import Rule
from servesim.features import Component, Part
from servesim.runfile import build_run

from grader.verify import replay_run
from grader.verify.problems import ProblemKind

NAME = "tenant eviction"
EVICT_AT_MS = 5.0
DEVICE = DeviceProfile()
TRACE = parse_trace(
    {
        "name": "eviction",
        "requests": [
            {"id": rid, "arrivalMs": 0, "inputTokens": 2, "outputTokens": 6, "tenant": tenant}
            for rid, tenant in (("R0", "a"), ("R1", "b"), ("R2", "a"))
        ],
    }
)


class Eviction(Part):
    """At the first decision point at or after ``EVICT_AT_MS``, tenant b's live requests go."""

    def __init__(self, state):
        self.state, self.done = state, False

    def evict(self, clock: float) -> None:
        if self.done or clock < EVICT_AT_MS:
            return
        self.done = True
        for seq in list(self.state.live.values()):
            if seq.tenant == "b":
                self.state.terminate(seq, Status.CANCELLED, clock, "evicted")


RULE = Component(NAME, rules=(Rule(NAME, "evict"),), part=Eviction)


@pytest.fixture
def registered():
    with componenttools.registered(RULE):
        yield


def run_of() -> dict:
    return build_run("p", {}, DEVICE, simulate(TRACE, greedy, DEVICE), None, extended=True)


def invalid(run) -> dict[str, str]:
    problems, _ = replay_run(run, TRACE, DEVICE.to_json())
    return {p.statistic: p.message for p in problems if p.kind is ProblemKind.INVALID_SCHEDULE}


def by_id(run, rid) -> dict:
    return next(r for r in run["requests"] if r["id"] == rid)


def test_engine_and_replay_fire_the_registered_rule(registered):
    run = run_of()
    evicted = by_id(run, "R1")
    assert evicted["status"] == "cancelled" and evicted["statusMs"] >= EVICT_AT_MS
    assert by_id(run, "R0")["status"] == by_id(run, "R2")["status"] == "completed"
    assert invalid(run) == {}


def test_the_replay_names_a_run_that_hides_the_eviction(registered):
    run = run_of()
    forged = copy.deepcopy(run)
    by_id(forged, "R1")["statusMs"] += 1.0
    assert "'R1' is cancelled by the rule 'evicted'" in invalid(forged)["status"]
    components.unregister(NAME)
    try:  # without the rule, the eviction is what the run must not claim
        assert "status" in invalid(run)
    finally:
        components.register(RULE)
