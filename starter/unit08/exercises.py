#!/usr/bin/env python3
"""Worked numbers of chapter 31's exercises, computed (given; not graded).

    python3 exercises.py 31.3 [--lengths 64 64 256]
    python3 exercises.py 31.4 [--new 256 --cached 257 --split 100 --chunks 64 16]

31.3: length utilisation when a batch of prompts is padded to its longest one, for the linear
layers (sum P / n P_max) and for a full squared attention matrix (sum P^2 / n P_max^2),
formula 31.3. 31.4: causal attention pairs of q new positions after s cached ones, counted
query by query and by formula 31.4 (q s + q (q + 1) / 2); the same q split in two chunks; and the
prompt run through this lab's engine in several chunkings on a device that charges 1 ms per
attention pair (``prefillMsPerContextToken``, the cost ``servesim/rules.py`` adds for context)
and nothing else, next to how many cached positions the chunks read again. ``--json`` prints
the numbers as JSON (the lesson site checks its pages against it).
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servesim import Batch, DeviceProfile, PrefillChunk, parse_trace, rules, simulate
from servesim.cli import _int_at_least as int_at_least

EXIT_BAD_INPUT = 2


def padding(lengths: list[int]) -> dict:
    """Exercise 31.3: utilisation of a batch padded to its longest prompt."""
    n, longest = len(lengths), max(lengths)
    return {
        "exercise": "31.3",
        "lengths": lengths,
        "longest": longest,
        "linear": _fraction(Fraction(sum(lengths), n * longest)),
        "attention": _fraction(Fraction(sum(p * p for p in lengths), n * longest * longest)),
    }


def pairs_counted(new: int, cached: int) -> int:
    """Query r of the chunk (r = 1..new) sees the cached keys and the new ones up to itself."""
    return sum(cached + r for r in range(1, new + 1))


def engine_chunking(new: int, cached: int, chunks: list[int]) -> dict:
    """The prompt's ``cached`` positions in one step, then ``new`` more in ``chunks``, on a
    device that charges 1 ms per attention pair and nothing else: what the chunks cost, and
    the cached positions they read (each chunk reads everything cached before it)."""
    device = DeviceProfile(
        prefill_ms_per_token=0.0,
        decode_batch_ms=0.0,
        overhead_ms=0.0,
        prefill_ms_per_context_token=1.0,
    )
    prompt = {"id": "P", "arrivalMs": 0, "inputTokens": cached + new, "outputTokens": 1}
    trace = parse_trace({"name": "exercise-31-4", "requests": [prompt]})
    sizes = iter([cached, *chunks] if cached else chunks)
    timeline = simulate(trace, lambda view: Batch(prefill=[PrefillChunk("P", next(sizes))]), device)
    steps = timeline.events[1:] if cached else timeline.events
    return {
        "chunks": chunks,
        "pairs": round(sum(step.end_ms - step.start_ms for step in steps)),
        "cachedReads": sum(step.prefill_from[0] for step in steps),
    }


def attention_pairs(new: int, cached: int, split: int, chunk_sizes: list[int]) -> dict:
    """Exercise 31.4: formula 31.4 against a count, and its conservation under chunking."""
    first, second = split, new - split
    chunkings = [[new], [first, second]]
    for size in chunk_sizes:
        chunkings.append([size] * (new // size) + ([new % size] if new % size else []))
    return {
        "exercise": "31.4",
        "new": new,
        "cached": cached,
        "counted": pairs_counted(new, cached),
        "formula": rules.attention_pairs(new, cached),
        "split": [first, second],
        "splitPairs": [
            rules.attention_pairs(first, cached),
            rules.attention_pairs(second, cached + first),
        ],
        "engine": [engine_chunking(new, cached, chunks) for chunks in chunkings],
    }


def render_padding(r: dict) -> str:
    lengths, longest, n = r["lengths"], r["longest"], len(r["lengths"])
    return "\n".join(
        [
            f"exercise 31.3: {n} prompts of {', '.join(map(str, lengths))} padded to the longest "
            f"({longest})",
            f"  linear layers:     {sum(lengths)} / ({n} x {longest}) = {_show(r['linear'])}",
            f"  squared attention: {sum(p * p for p in lengths)} / ({n} x {longest}^2) = "
            f"{_show(r['attention'])}",
        ]
    )


def render_pairs(r: dict) -> str:
    q, s = r["new"], r["cached"]
    (a, b), (pa, pb) = r["split"], r["splitPairs"]
    lines = [
        f"exercise 31.4: causal attention pairs of q = {q} new positions after s = {s} cached",
        f"  counted query by query, sum of (s + r) for r = 1..q: {r['counted']}",
        f"  formula 31.4, q s + q (q + 1) / 2 = {q * s} + {q * (q + 1) // 2} = {r['formula']}",
        f"  split {a} + {b}: {pa} (after {s} cached) + {pb} (after {s + a}) = {pa + pb}",
        "  on this lab's engine, a device charging 1 ms per attention pair:",
        f"    {'chunks':<24}{'pairs charged':>14}{'cached positions read':>24}",
    ]
    for row in r["engine"]:
        chunks = row["chunks"]
        label = " + ".join(map(str, chunks))
        if len(chunks) > 3:
            rest = f" + {chunks[-1]}" if chunks[-1] != chunks[0] else ""
            label = f"{len(chunks) - bool(rest)} x {chunks[0]}{rest}"
        lines.append(f"    {label:<24}{row['pairs']:>14}{row['cachedReads']:>24}")
    lines.append(
        "  the pairs stay the same; every extra chunk reads the history again (and is one more "
        "submission)"
    )
    return "\n".join(lines)


def _fraction(value: Fraction) -> list[int]:
    return [value.numerator, value.denominator]


def _show(pair: list[int]) -> str:
    return f"{pair[0]}/{pair[1]}" if pair[1] != 1 else str(pair[0])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="exercises.py", description=__doc__.split("\n\n")[0])
    exercises = parser.add_subparsers(dest="exercise", required=True, metavar="EXERCISE")
    ex3 = exercises.add_parser("31.3", help="padding utilisation (formula 31.3)")
    ex3.add_argument("--lengths", type=int_at_least(1), nargs="+", default=[64, 64, 256])
    ex4 = exercises.add_parser("31.4", help="attention pairs under chunking (formula 31.4)")
    ex4.add_argument(
        "--new", type=int_at_least(1), default=256, help="new positions q (default 256)"
    )
    ex4.add_argument("--cached", type=int_at_least(0), default=257, help="cached positions s (257)")
    ex4.add_argument("--split", type=int_at_least(1), default=100, help="first of two chunks (100)")
    ex4.add_argument("--chunks", type=int_at_least(1), nargs="*", default=[64, 16], help="(64 16)")
    for sub in (ex3, ex4):
        sub.add_argument("--json", action="store_true", help="print the numbers as JSON")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.exercise == "31.3":
        result, text = padding(args.lengths), render_padding
    else:
        if args.split >= args.new:
            parser.error(f"--split must be below --new ({args.new}), got {args.split}")
        result = attention_pairs(args.new, args.cached, args.split, args.chunks)
        text = render_pairs
    print(json.dumps(result, indent=1) if args.json else text(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
