"""The next rule is one component: a rule no unit has (at most two tenants, each its own LoRA
adapter, in one batch) is registered as one ``features.Component`` with a run-file field
(each event's ``tenants``) and a replay check, and the engine, the trusted replay and the run
viewer honour it without any of their files naming it. Unregistered, the rule is gone."""

from __future__ import annotations

from pathlib import Path

import componenttools
import pytest
from componenttools import greedy
from servesim import (
    Batch,
    DeviceProfile,
    PolicyError,
    PrefillChunk,
    components,
    parse_trace,
    simulate,
)
from servesim.features import Component, Part
from servesim.runfile import build_run
from servesim.runview.model import replay as view_replay
from servesim.runview.page import page_data

from grader.verify import replay_run
from grader.verify.problems import ProblemKind

NAME = "tenants per batch"
MAX_TENANTS = 2
DEVICE = DeviceProfile()
TRACE = parse_trace(
    {
        "name": "tenants",
        "requests": [
            {"id": rid, "arrivalMs": 0, "inputTokens": 3, "outputTokens": 3, "tenant": tenant}
            for rid, tenant in (("R0", "a"), ("R1", "b"), ("R2", "c"), ("R3", "a"))
        ],
    }
)


def _tenants(ids, tenant_of) -> list[str]:
    return sorted({tenant_of(rid) for rid in ids})


def _event_ids(event: dict) -> list[str]:
    return [*event["decode"], *(chunk["id"] for chunk in event["prefill"])]


class TenantCap(Part):
    """The rule's per-run part: each admitted request's tenant; a batch of more tenants is
    refused; each event records the tenants it served."""

    def __init__(self, state):
        self.tenant_of: dict[str, str] = {}

    def arrive(self, seq) -> None:
        self.tenant_of[seq.id] = seq.tenant

    def check(self, batch, view) -> str | None:
        found = _tenants(batch.ids, self.tenant_of.__getitem__)
        if len(found) > MAX_TENANTS:
            return f"it serves {len(found)} tenants, at most {MAX_TENANTS} adapters fit a batch"
        return None

    def marks(self, batch) -> dict:
        return {"tenants": _tenants(batch.ids, self.tenant_of.__getitem__)}


def replay_check(event: dict, requests, device):
    """The event's ``tenants`` claim and the cap, against the trace's tenants."""
    known = [rid for rid in _event_ids(event) if rid in requests]
    derived = _tenants(known, lambda rid: requests[rid].tenant)
    if event.get("tenants") != derived:
        yield "events[].tenants", f"it claims tenants {event.get('tenants')}, it serves {derived}"
    if len(derived) > MAX_TENANTS:
        yield NAME, f"it serves {len(derived)} tenants, at most {MAX_TENANTS} may share a batch"


def view_marks(event: dict, requests) -> dict:
    return {"tenants": _tenants(_event_ids(event), lambda rid: requests[rid].get("tenant", ""))}


RULE = Component(
    NAME,
    part=TenantCap,
    event_fields=("tenants",),
    replay=replay_check,
    view=view_marks,
)


@pytest.fixture
def registered():
    with componenttools.registered(RULE):
        yield


def two_tenants(view):
    """``greedy``, leaving out a request whose tenant would be a third in the batch."""
    chosen, seen = [], set()
    for seq in (*view.running, *view.waiting):
        if seq.tenant in seen or len(seen) < MAX_TENANTS:
            seen.add(seq.tenant)
            chosen.append(seq)
    decode = [s.id for s in chosen if s in view.running]
    chunks = [PrefillChunk(s.id, s.remaining_prefill) for s in chosen if s not in view.running]
    return Batch(decode=decode, prefill=chunks)


def run_of(policy) -> dict:
    return build_run("p", {}, DEVICE, simulate(TRACE, policy, DEVICE), None, extended=True)


def invalid(run) -> dict[str, str]:
    problems, _ = replay_run(run, TRACE, DEVICE.to_json())
    return {p.statistic: p.message for p in problems if p.kind is ProblemKind.INVALID_SCHEDULE}


def test_without_the_component_no_executor_knows_the_rule():
    run = run_of(greedy)
    assert max(len(_tenants(_event_ids(e), TRACE_TENANT.get)) for e in run["events"]) == 3
    assert all("tenants" not in event for event in run["events"])
    assert invalid(run) == {}
    picture = view_replay(run)
    assert all(step.marks is None for step in picture.steps)
    assert "mk" not in page_data(picture, None)


TRACE_TENANT = {r.id: r.tenant for r in TRACE.requests}


def test_the_engine_refuses_a_batch_the_registered_rule_forbids(registered):
    with pytest.raises(PolicyError, match="at most 2 adapters fit a batch"):
        simulate(TRACE, greedy, DEVICE)


def test_engine_replay_and_viewer_honour_the_registered_rule(registered):
    run = run_of(two_tenants)
    claimed = [event["tenants"] for event in run["events"]]
    assert claimed[0] == ["a", "b"] and max(map(len, claimed)) == MAX_TENANTS
    assert any("c" in tenants for tenants in claimed)  # R2 runs once a tenant slot is free
    assert invalid(run) == {}
    picture = view_replay(run)
    assert [step.marks["tenants"] for step in picture.steps] == claimed
    shown = page_data(picture, None)["mk"]  # what the page's step table prints
    assert shown == [[n, "tenants: " + ", ".join(t)] for n, t in enumerate(claimed)]


def test_the_replay_names_a_forged_field_and_a_broken_cap(registered):
    run = run_of(two_tenants)
    run["events"][0]["tenants"] = ["a"]
    assert "claims tenants ['a'], it serves ['a', 'b']" in invalid(run)["events[].tenants"]

    components.unregister(NAME)
    unruly = run_of(greedy)  # made by an engine without the rule: three tenants at once
    components.register(RULE)
    for event in unruly["events"]:
        event["tenants"] = _tenants(_event_ids(event), TRACE_TENANT.get)
    assert "serves 3 tenants, at most 2" in invalid(unruly)[NAME]


def test_no_executor_file_names_the_rule():
    root = Path(__file__).resolve().parents[1]
    for path in ("servesim/engine.py", "servesim/state.py", "grader/verify/replay.py"):
        assert "tenants" not in (root / path).read_text(encoding="utf-8")
    assert "tenant" not in (root / "servesim/runview/model.py").read_text(encoding="utf-8")
