"""What the unit 09 notebook runs: the example of 31.10, the runs of 31.12 and the situations
of 31.13.

One source for both the notebook builder (the commands in the cells, the numbers in the prose)
and the answer keys (the same runs with the reference policies and the reference
``measure.py``), so they cannot drift. Paths are relative to the lab folder.
"""

from __future__ import annotations

# Exercise 31.10: ex31_10.py's one streaming request (the lab's traces/ex31-10.json, whose read
# rate is each student's own), run without a pause deadline.
D1 = {"kib": 1024}
D1_FIELDS = [
    "pause_s",
    "tokens_before_pause",
    "produce_kib_s",
    "read_kib_s",
    "fill_s_formula",
    "resume_s",
]

# Exercise 31.12: three runs, one per cause. Two are tailruns.py situations (fill_slots on the
# 31.13 device); the recompute one is the student's own cancel_aware on a pool that preempts.
D2 = {
    "situations": {"overload": "overload", "slow clients": "slow clients"},
    "recompute": {
        "trace": "evict",
        "device": "devices/pool-24.json",
        "policy": "cancel_aware",
    },
}
D2_RUNS = ["overload", "recompute", "slow clients"]
# The measurements a plan can pick, each read as one share (slow_clients: its ``paused``).
D2_MEASURES = ["prefill_amplification", "waiting_share", "slow_clients"]
# The denominators a student picks from; the right ones come from the reference Ratio's ``what``.
D2_DENOMINATORS = [
    "requests submitted",
    "new prompt tokens",
    "prefill tokens executed",
    "ms in the system (prefilled)",
    "ms of the window",
    "requests streamed",
    "requests completed",
]

# Exercise 31.13: every tailruns.py situation against its baseline, then the follow-ups of
# ex31_13.py (what each diagnosis implies) on the engine.
D3_FIELDS = ["cause", "p99_wait_ms", "p99_itl_ms", "rejected"]
