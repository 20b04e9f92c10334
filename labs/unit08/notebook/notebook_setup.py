"""What the unit 08 notebook runs: traces, devices, SLOs, windows, loads and targets.

One source for both the notebook builder (the commands in the cells, the numbers in the
prose) and the answer keys (the same runs with the reference policies), so they cannot drift.
Paths are relative to the lab folder.
"""

from __future__ import annotations

# Deliverable 1: goodput with both denominators on `burst`, a small page pool and a bounded
# queue, so that rejections, cancellations and SLO misses all occur. The window is the unit's
# one window (servesim.protocol.measurement_window) for a trace: no warm-up, a cool-down of one.
D1 = {
    "trace": "burst",
    "device": "devices/pool-256.json",
    "queue_cap": 8,
    "policies": ["budgeted", "paged"],
    "slo_ttft_ms": 1000.0,
    "slo_tpot_ms": 50.0,
    "warmup": 0,
    "cooldown": 1,
}

# Deliverable 2: a closed-loop protocol on one tier, then the same protocol with open-loop
# arrivals at the rate the closed loop reached (the mean over its replications).
D2 = {
    "protocol": "protocols/notebook-loops.json",
    "tier": "tiers/small-paged.json",
}

# Deliverable 3: the notebook's sweep protocol over every tier, judged at the protocol's
# targets and again, on the same runs, at looser ones.
D3 = {
    "protocol": "protocols/notebook-sweep.json",
    "tiers": ["large-paged", "small-int8", "small-paged", "small-reserved"],
    "targets": {
        "target": {"attainment": 0.9, "qualityPassRate": 0.9},
        "loose": {"attainment": 0.85, "qualityPassRate": 0.85},
    },
}

# Deliverable 1's fields, by the test cell that checks them (``d1_counts``, ``d1_rates``,
# ``d1_tpot``); the optional ones are None when no request qualifies for them.
D1_FIELDS = {
    "counts": ["submitted", "rejected", "cancelled", "succeeded", "qualifying"],
    "rates": ["goodput_per_s", "attainment_submitted", "attainment_succeeded"],
    "tpot": ["tpot_request_weighted", "tpot_token_weighted"],
}
D1_OPTIONAL = {"attainment_succeeded", "tpot_request_weighted", "tpot_token_weighted"}

NOT_YET_KNOWN = "not yet known"  # d3's cheapest when the runs cannot tell
