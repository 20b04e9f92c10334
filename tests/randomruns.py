"""Unit 08 runs the run-file tests share: random small traces under the reference policies, and
the four requests that outgrow a 64-page pool (``pressure``), which ``swap_long`` swaps."""

from __future__ import annotations

import servesim
from hypothesis import strategies as st
from servesim.runfile import build_run

from grader import reference
from grader.units import load_unit

U08 = load_unit("unit08")


def request_rows(last_arrival_quarters: int):
    """A strategy for one request's fields, arriving by ``last_arrival_quarters`` / 4 ms."""
    return st.fixed_dictionaries(
        {
            "arrivalMs": st.integers(0, last_arrival_quarters).map(lambda q: q / 4),
            "inputTokens": st.integers(1, 60),
            "outputTokens": st.integers(1, 30),
        }
    )


def unit08_run(rows, policy, budget, pool, cap):
    """A full unit 08 run entry and its timeline (None, None when the engine rejects a batch)."""
    trace = servesim.parse_trace({"name": "random", "requests": rows})
    need = max(-(-(r["inputTokens"] + r["outputTokens"]) // 16) for r in rows)
    device = servesim.DeviceProfile(decode_batch_ms=2.0, kv_pages=need + pool, max_active=cap)
    params = {"budget": budget, "quantum": 8} if policy == "fair" else {"budget": budget}
    if policy in ("static", "continuous"):
        params = {}
    function = getattr(reference.solution_policies(U08), policy)
    try:
        timeline = servesim.simulate(
            trace, lambda view: function(view, **params), device, budget=params.get("budget")
        )
    except servesim.PolicyError:
        return None, None
    return build_run(policy, params, device, timeline, None, extended=True), timeline


PRESSURE = [
    {"id": f"r{i}", "arrivalMs": 5 * i, "inputTokens": 200, "outputTokens": 100} for i in range(4)
]


def pressure_device(host_pages: int) -> servesim.DeviceProfile:
    """A 64-page pool that ``PRESSURE`` outgrows while it decodes, with a host pool to swap to."""
    return servesim.DeviceProfile(
        prefill_ms_per_token=0.1,
        decode_batch_ms=20,
        decode_ms_per_seq=0.05,
        kv_pages=64,
        swap_ms_per_page=0.05,
        swap_sync_ms=0.5,
        host_pages=host_pages,
    )
