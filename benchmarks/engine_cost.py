"""Benchmark: the lab engine's cost per token event stays flat as the queue grows.

The job of the Vidur comparison (peers/vidur/README.md in the shared folder): the Azure LLM
inference 2023 conversation trace (CC-BY 4.0, Azure/AzurePublicDataset; Patel et al.,
"Splitwise", ISCA 2024), arrival = seconds since the first row; a Sarathi-style policy (decode
every running sequence, then fill a 512-token budget with FIFO prefill chunks, a request that
has not started joins only while fewer than 128 sequences hold KV); an affine device (0.25 ms
+ 0.1 ms per prefill token + 20 ms + 0.05 ms per decoded sequence). Runs the first 1k, 5k, 10k
requests and the whole trace, and prints the loop time (median of --repeat runs), the steps,
the last token and microseconds per token event (one decode slot or prefill completion).

    .venv/bin/python benchmarks/engine_cost.py [--sizes 1000,5000,10000,0] [--repeat 3]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from servesim import Batch, DeviceProfile, PrefillChunk, parse_trace, simulate  # noqa: E402

DEFAULT_CSV = REPO.parent / "shared/data/azure-llm-2023/AzureLLMInferenceTrace_conv.csv"
DEVICE = DeviceProfile(
    prefill_ms_per_token=0.1,
    decode_batch_ms=20.0,
    decode_ms_per_seq=0.05,
    overhead_ms=0.25,
    max_active=128,
)
BUDGET = 512


def sarathi(view, budget: int = BUDGET) -> Batch:
    """The peer job's scheduler (unit 08's ``budgeted`` without a page pool)."""
    decode = [s.id for s in view.running]
    left, active, cap = budget - len(decode), view.active, view.device.max_active
    chunks = []
    for seq in view.waiting:
        if left <= 0:
            break
        if not seq.holds_kv:
            if cap is not None and active >= cap:
                break
            active += 1
        tokens = min(left, seq.remaining_prefill)
        chunks.append(PrefillChunk(seq.id, tokens))
        left -= tokens
    return Batch(decode, chunks)


def load(csv_path: Path, count: int):
    from datetime import datetime

    rows = []
    with open(csv_path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            whole, _, frac = row["TIMESTAMP"].strip().partition(".")
            stamp = datetime.strptime(whole, "%Y-%m-%d %H:%M:%S").timestamp()
            stamp += float(f"0.{frac}") if frac else 0.0
            rows.append((stamp, int(row["ContextTokens"]), int(row["GeneratedTokens"])))
            if count and len(rows) == count:
                break
    first = rows[0][0]
    requests = [
        {"id": f"r{i}", "arrivalMs": (t - first) * 1000.0, "inputTokens": n, "outputTokens": o}
        for i, (t, n, o) in enumerate(rows)
    ]
    return parse_trace({"name": f"azure-conv-{len(rows)}", "requests": requests})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000,10000,0", help="request counts, 0 = all")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    args = parser.parse_args()
    if not args.csv.is_file():
        print(f"engine_cost.py: error: no trace CSV at {args.csv}", file=sys.stderr)
        return 2
    print(
        f"{'requests':>9} {'steps':>7} {'last token s':>13} {'events':>10} {'loop s':>8} "
        f"{'us/event':>9}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        trace = load(args.csv, size)
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            timeline = simulate(trace, sarathi, DEVICE, budget=BUDGET)
            times.append(time.perf_counter() - started)
        loop = statistics.median(times)
        events = sum(len(s.token_times_ms) for s in timeline.sequences)
        print(
            f"{len(trace.requests):>9} {len(timeline.events):>7} "
            f"{timeline.all_done_ms / 1000:>13.2f} {events:>10} {loop:>8.2f} "
            f"{loop / events * 1e6:>9.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
