"""What the unit 08 notebook runs: traces, devices, SLOs, windows, loads and targets.

One source for both the notebook builder (the commands in the cells, the numbers in the
prose) and the answer keys (the same runs with the reference policies), so they cannot drift.
Paths are relative to the lab folder.
"""

from __future__ import annotations

# Deliverable 1: goodput with both denominators on `burst`, a small page pool and a bounded
# queue, so that rejections, cancellations and SLO misses all occur.
D1 = {
    "trace": "burst",
    "device": "devices/pool-256.json",
    "queue_cap": 8,
    "policies": ["budgeted", "paged"],
    "slo_ttft_ms": 1000.0,
    "slo_tpot_ms": 50.0,
    "start_ms": 0.0,
    "end_ms": 15000.0,
}

# Deliverable 2: a closed loop, then an open loop at the rate the closed loop reached.
D2 = {
    "tier": "tiers/small-paged.json",
    "trace": "azure-conv-slice",
    "users": 32,
    "think_ms": 2000.0,
    "requests": 300,
    "slo_ttft_ms": 2000.0,
    "slo_tpot_ms": 80.0,
    "little_start_ms": 20000.0,
    "little_end_ms": 80000.0,
}

# Deliverable 3: sweep.py over every tier, then the same points under a stricter target.
D3 = {
    "trace": "azure-conv-slice",
    "tiers": ["large-paged", "small-int8", "small-paged", "small-reserved"],
    "loads": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    "requests": 200,  # sweep.py's default is 300; 200 keeps autograding quick, same picture
    "seed": 1,
    "slo_ttft_ms": 2000.0,
    "slo_tpot_ms": 80.0,
    "target": 0.9,
    "strict_target": 0.95,
}
