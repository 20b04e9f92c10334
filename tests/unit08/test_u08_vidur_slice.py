"""``budgeted`` with B = 512 and K = 128 on the Vidur peer job's device: the schedule of the
Azure conversation trace's first 2,000 requests equals an independent batch-level model's.

The whole trace (19,366 requests; Vidur: 57,825 steps, last token at about 3,613.97 s) is checked
by ``benchmarks/unit08_vidur_schedule.py``; it takes too long for a unit test.
"""

import pytest
from sarathi_ref import sarathi_schedule
from u08tools import make_trace, run08

from grader.tracegen import DataMissing
from grader.unit08_traces import azure_rows

SLICE = 2000


@pytest.fixture(scope="module")
def rows():
    try:
        return azure_rows("AzureLLMInferenceTrace_conv.csv")[:SLICE]
    except DataMissing as exc:
        pytest.skip(f"Azure trace not available: {exc}")


def test_budgeted_matches_the_independent_sarathi_model(rows):
    trace = make_trace(
        [
            {"id": f"a{k}", "arrivalMs": t * 1000, "inputTokens": p, "outputTokens": o}
            for k, (t, p, o) in enumerate(rows)
        ]
    )
    run = run08(trace, "budgeted", budget=512)  # the unit's device is the peer job's
    want = sarathi_schedule([(t * 1000, p, o) for t, p, o in rows])
    summary = run["summary"]
    assert summary["submissions"] == want.steps
    assert summary["allDoneMs"] == pytest.approx(want.last_token_ms, abs=1e-6)
    assert sum(len(e["decode"]) for e in run["events"]) == want.decode_slots
    assert sum(c["tokens"] for e in run["events"] for c in e["prefill"]) == want.prefill_tokens
    assert summary["completed"] == SLICE
