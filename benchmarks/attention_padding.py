#!/usr/bin/env python3
"""Padding waste of attention: one decode step mixing one long context with many short ones.

Prints, per attention path of the runner (``exact``: each sequence over its own keys, the
default; ``padded``: groups of similar length padded to their widest), the median time of the
mixed step against the sum of the same sequences run as separate steps grouped by similar length
(``attention_plan.length_groups``), and against the short ones alone. With per-sequence attention
the mixed step should cost about what its parts cost; padding makes the short ones pay for the
long one. Each timed step is a real decode step (contexts grow by one per step).

    python3 benchmarks/attention_padding.py [--model small] [--long 2048] [--short 31]
        [--short-context 32] [--steps 5] [--device cpu]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the engine packages' one source

import torch  # noqa: E402
from realdevice.attention_plan import length_groups  # noqa: E402
from realdevice.backend import RealDevice  # noqa: E402
from servesim import Batch, PrefillChunk  # noqa: E402


def _timed(real: RealDevice, batch: Batch) -> float:
    if real.device.type == "cuda":
        torch.cuda.synchronize()
    began = time.perf_counter()
    real.executor.run(batch)  # reads the argmax back: the step has finished
    return (time.perf_counter() - began) * 1e3


def measure(args, attention: str) -> dict[str, float]:
    # short contexts spread geometrically from --short-context up to a quarter of the long one,
    # so the padded path's (at most 4) groups mix different lengths
    top = max(args.short_context, args.long // 4)
    spread = [
        round(args.short_context * (top / args.short_context) ** (i / max(1, args.short - 1)))
        for i in range(args.short)
    ]
    contexts = {"long": args.long, **{f"s{i}": n for i, n in enumerate(spread)}}
    pages = sum(-(-(n + 3 * args.steps + 1) // 16) for n in contexts.values())
    real = RealDevice(
        args.model, device=args.device, page_tokens=16, kv_pages=pages, attention=attention
    )
    for rid, n in contexts.items():
        real.executor.add_request(rid, n, 3 * args.steps + 1)
        real.executor.run(Batch(prefill=(PrefillChunk(rid, n),)))
    rids = list(contexts)
    groups = [[rids[i] for i in g] for g in length_groups(list(contexts.values()))]
    shorts = [r for r in rids if r != "long"]
    mixed, parts, short_only = [], [], []
    for _ in range(args.steps):
        mixed.append(_timed(real, Batch(decode=tuple(rids))))
        parts.append(sum(_timed(real, Batch(decode=tuple(g))) for g in groups))
        # the short ones alone (the long one skips a step; its context is unchanged)
        short_only.append(_timed(real, Batch(decode=tuple(shorts))))
        real.executor.run(Batch(decode=("long",)))
    return {
        "mixed": statistics.median(mixed),
        "groups": statistics.median(parts),
        "shortOnly": statistics.median(short_only),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="attention_padding.py", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--model", default="small")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--long", type=int, default=2048, help="context of the long sequence")
    parser.add_argument("--short", type=int, default=31, help="how many short sequences")
    parser.add_argument(
        "--short-context",
        type=int,
        default=16,
        help="the shortest context (they spread up to a quarter of --long)",
    )
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args(argv)
    if min(args.long, args.short, args.short_context, args.steps) < 1:
        parser.error("--long, --short, --short-context and --steps must be >= 1")
    if args.device == "cpu":
        torch.set_num_threads(1)
    print(
        f"{args.model} on {args.device}: one decode step of 1 x {args.long} + {args.short} "
        f"short contexts from {args.short_context} to {max(args.short_context, args.long // 4)} "
        f"tokens (median of {args.steps} steps)"
    )
    for attention in ("exact", "padded"):
        m = measure(args, attention)
        print(
            f"  {attention:7s} mixed step {m['mixed']:8.2f} ms | same sequences in groups of "
            f"similar length {m['groups']:8.2f} ms (ratio {m['mixed'] / m['groups']:.2f}) | "
            f"the short ones alone {m['shortOnly']:8.2f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
