"""Check: unit 08's ``budgeted`` policy reproduces the Vidur peer job's schedule on the whole trace.

The job (``peers/vidur/README.md`` in the shared folder): the whole Azure conversation trace
(19,366 requests, CC-BY 4.0, Azure/AzurePublicDataset; Patel et al., "Splitwise", ISCA 2024),
Sarathi-style steps with a token budget of 512 and at most 128 sequences holding KV, the affine
A30-like device (unit 08's default). Vidur and the peer's prototype report 57,825 steps and a
last token at about 3,613.97 s. This script runs the lab engine with the reference ``budgeted``
policy, and the independent batch-level model of ``tests/unit08/sarathi_ref.py``, prints both
schedules and the wall time, and exits 1 if either differs from Vidur's figures.

    INFRALAB_DATA=DIR .venv/bin/python benchmarks/unit08_vidur_schedule.py [--requests N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests" / "unit08")]

import servesim  # noqa: E402
from sarathi_ref import sarathi_schedule  # noqa: E402

from grader import reference  # noqa: E402
from grader.plugins import load_file  # noqa: E402
from grader.units import load_unit  # noqa: E402

azure_rows = load_file(load_unit("unit08").unit_dir / "public_traces.py").azure_rows

VIDUR_STEPS, VIDUR_LAST_S = 57_825, 3613.97


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, help="only the first N requests (no Vidur check)")
    args = parser.parse_args()
    unit = load_unit("unit08")
    rows = azure_rows("AzureLLMInferenceTrace_conv.csv")[: args.requests]
    trace = servesim.parse_trace(
        {
            "name": "azure-conv-all",
            "requests": [
                {"id": f"a{k}", "arrivalMs": t * 1000, "inputTokens": p, "outputTokens": o}
                for k, (t, p, o) in enumerate(rows)
            ],
        }
    )
    device = reference.device_profile(unit)
    start = time.perf_counter()
    run = reference.run_reference(unit, trace, "budgeted", {"budget": 512}, device)
    engine_s = time.perf_counter() - start
    start = time.perf_counter()
    model = sarathi_schedule([(t * 1000, p, o) for t, p, o in rows])
    model_s = time.perf_counter() - start
    steps, last_s = run["summary"]["submissions"], run["summary"]["allDoneMs"] / 1000
    decode = sum(len(e["decode"]) for e in run["events"])
    prefill = sum(c["tokens"] for e in run["events"] for c in e["prefill"])
    print(f"requests {len(rows)}; device {device.to_json()}")
    print(
        f"lab engine + budgeted: {steps} steps, last token {last_s:.2f} s, {decode} decode "
        f"slots, {prefill} prefill tokens; {engine_s:.1f} s wall (run entry included)"
    )
    print(
        f"independent model:     {model.steps} steps, last token "
        f"{model.last_token_ms / 1000:.2f} s, {model.decode_slots} decode slots, "
        f"{model.prefill_tokens} prefill tokens; {model_s:.1f} s wall"
    )
    same = (steps, decode, prefill) == (model.steps, model.decode_slots, model.prefill_tokens)
    same = same and abs(last_s * 1000 - model.last_token_ms) < 1e-6
    if args.requests is None:
        print(f"Vidur:                 {VIDUR_STEPS} steps, last token about {VIDUR_LAST_S} s")
        same = same and steps == VIDUR_STEPS and abs(last_s - VIDUR_LAST_S) < 0.005
    print("schedule matches" if same else "SCHEDULE DIFFERS")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
