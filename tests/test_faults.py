"""Each fault switch keeps the schedule and the token times, and breaks one reported field."""

import pytest
from labtools import log_contexts, run_ref
from servesim import DeviceProfile, rules
from servesim.faults import FAULTS
from servesim.metrics import request_metrics

EXPECTED_FIELD = {
    "ttft-from-prefill-start": {"ttftMs"},
    "itl-with-first-gap": {"itlMs", "maxItlMs"},
    "tpot-over-n": {"tpotMs"},
    "events-without-overhead": {"events.endMs"},
    "e2e-from-first-token": {"e2eMs"},
}


def fields_disagreeing_with_timeline(run: dict) -> set[str]:
    """Recompute every statistic from tokenTimesMs and events; name the fields that differ."""
    bad = set()
    for req in run["requests"]:
        for key, value in request_metrics(req["arrivalMs"], req["tokenTimesMs"]).items():
            if req[key] != value:
                bad.add(key)
    token_times = {t for req in run["requests"] for t in req["tokenTimesMs"]}
    device = DeviceProfile.from_json(run["device"])
    for event, context in zip(run["events"], log_contexts(run), strict=True):
        expected = event["startMs"] + rules.step_duration_ms(device, _batch(event), context)
        if event["endMs"] != expected or (event["endMs"] not in token_times and event["decode"]):
            bad.add("events.endMs")
    return bad


def _batch(event: dict):
    from servesim import Batch, PrefillChunk

    chunks = [PrefillChunk(c["id"], c["tokens"]) for c in event["prefill"]]
    return Batch(decode=event["decode"], prefill=chunks)


def schedule(run: dict) -> list:
    return [(e["startMs"], e["decode"], e["prefill"]) for e in run["events"]]


def test_every_fault_is_listed_here():
    assert set(FAULTS) == set(EXPECTED_FIELD)
    assert len(FAULTS) >= 4


# a profile with context costs (dyadic, so every time is exact) next to the unit's device
CONTEXT = {"prefill_ms_per_context_token": 0.125, "decode_ms_per_context_token": 0.0625}


@pytest.mark.parametrize("fault", sorted(EXPECTED_FIELD))
@pytest.mark.parametrize(("policy", "params"), [("fcfs", {}), ("chunked", {"chunk": 2})])
@pytest.mark.parametrize("device", [None, CONTEXT], ids=["lab-device", "context-costs"])
def test_fault_changes_statistics_not_schedule(fault, policy, params, device):
    clean = run_ref("mixed", policy, device=device, **params)
    faulty = run_ref("mixed", policy, fault=fault, device=device, **params)
    assert faulty["fault"] == fault and clean["fault"] is None
    assert schedule(faulty) == schedule(clean)
    assert [r["tokenTimesMs"] for r in faulty["requests"]] == [
        r["tokenTimesMs"] for r in clean["requests"]
    ]
    assert fields_disagreeing_with_timeline(clean) == set()
    assert fields_disagreeing_with_timeline(faulty) == EXPECTED_FIELD[fault]
    assert faulty["summary"] != clean["summary"]
