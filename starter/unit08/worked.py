#!/usr/bin/env python3
"""Worked numbers of chapter 31's exercises 31.3, 31.4 and section 31.6's swap example,
computed (given; not graded). ``exercises.py`` runs them:

    python3 exercises.py 31.3 [--lengths 64 64 256]
    python3 exercises.py 31.4 [--new 256 --cached 257 --split 100 --chunks 64 16]
    python3 exercises.py swap [--lengths 16 44 45 1024 --page-tokens 1]

31.3: length utilisation when a batch of prompts is padded to its longest one, for the linear
layers (sum P / n P_max) and for a full squared attention matrix (sum P^2 / n P_max^2),
formula 31.3. 31.4: causal attention pairs of q new positions after s cached ones, counted
query by query and by formula 31.4 (q s + q (q + 1) / 2); the same q split in two chunks; and the
prompt run through this lab's engine in several chunkings on a device that charges 1 ms per
attention pair (``prefillMsPerContextToken``, the cost ``servesim/rules.py`` adds for context)
and nothing else, next to how many cached positions the chunks read again. swap: the worked
example of section 31.6 (the chapter's exercise 31.6 is Little's law, in measure.py), recompute
vs swap for one preempted sequence, each way run through this lab's engine on a device with the
chapter's constants (64 KiB of KV per token, 20,000 prefill tokens/s, a 25 GB/s link, a sync
cost C_s of 2 ms per round trip) and a host pool; the cost of each way is its run's length
minus that of a run without the preemption, and the crossover is the shortest sequence whose
swap run is the shorter one. ``--json`` prints the numbers as JSON (the lesson site checks its
pages against it).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servesim import Batch, DeviceProfile, PrefillChunk, parse_trace, rules, simulate
from servesim.cliargs import int_at_least
from servesim.swapping import swap_long

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


@dataclass(frozen=True)
class SwapConstants:
    """Section 31.6's illustrative constants; a decode of one sequence costs what one prefill
    token does (one more position through the model)."""

    bytes_per_token: int = 64 * 1024
    tokens_per_s: float = 20_000
    link_bytes_per_s: float = 25e9
    sync_ms: float = 2.0  # C_s for a round trip: half when the pages go out, half when back
    page_tokens: int = 1

    def device(self, host_pages: int) -> DeviceProfile:
        token_ms = 1000 / self.tokens_per_s
        page_bytes = self.page_tokens * self.bytes_per_token
        return DeviceProfile(
            prefill_ms_per_token=token_ms,
            decode_batch_ms=0.0,
            decode_ms_per_seq=token_ms,
            overhead_ms=0.0,
            page_tokens=self.page_tokens,
            swap_ms_per_page=1000 * page_bytes / self.link_bytes_per_s,
            swap_sync_ms=self.sync_ms / 2,
            host_pages=host_pages,
        )


def newcomer(preempt: bool):
    """The scenario's policy: prefill the queue head whole, decode whoever runs; when a new
    request arrives while one runs, it gets its prefill and the running one is preempted
    (``preempt``) or decoded alongside (the run without the preemption)."""

    def policy(view) -> Batch:
        fresh = [s for s in view.waiting if not s.started]
        if fresh and view.running:
            first = PrefillChunk(fresh[0].id, fresh[0].remaining_prefill)
            if preempt:
                return Batch(prefill=[first], preempt=[view.running[-1].id])
            return Batch(decode=[s.id for s in view.running], prefill=[first])
        if view.running:
            return Batch.decode_of(view.running)
        if view.waiting:
            return Batch.prefill_of(view.waiting[0], view.waiting[0].remaining_prefill)
        return Batch()

    return policy


def preemption_runs(tokens: int, constants: SwapConstants) -> dict:
    """Sequence V (``tokens`` prompt tokens, 2 output tokens) runs its prefill; then W (1 token)
    arrives and V is preempted to make room, by recompute or by swap (``swap_long``), or not at
    all. Returns each run's length in ms and the pages V's cache holds."""
    device = constants.device(host_pages=rules.pages_for(constants.device(0), tokens))
    requests = [
        {"id": "V", "arrivalMs": 0, "inputTokens": tokens, "outputTokens": 2},
        {"id": "W", "arrivalMs": 0, "inputTokens": 1, "outputTokens": 1},
    ]
    trace = parse_trace({"name": "exercise-31-6", "requests": requests})
    policies = {
        "baseline": newcomer(preempt=False),
        "recompute": newcomer(preempt=True),
        "swap": swap_long(newcomer(preempt=True), min_tokens=0),
    }
    ms = {name: simulate(trace, p, device).all_done_ms for name, p in policies.items()}
    return {"tokens": tokens, "pages": device.pages_for(tokens), **ms}


def swap_or_recompute(lengths: list[int], constants: SwapConstants, up_to: int) -> dict:
    """Section 31.6's worked example: recompute vs swap, measured from runs."""
    rows = []
    for tokens in lengths:
        run = preemption_runs(tokens, constants)
        rows.append(
            {
                "tokens": tokens,
                "pages": run["pages"],
                "baselineMs": run["baseline"],
                "recomputeRunMs": run["recompute"],
                "swapRunMs": run["swap"],
                "recomputeMs": run["recompute"] - run["baseline"],
                "swapMs": run["swap"] - run["baseline"],
            }
        )
    crossover = next(
        (
            tokens
            for tokens in range(1, up_to + 1)
            if (run := preemption_runs(tokens, constants))["swap"] < run["recompute"]
        ),
        None,
    )
    return {
        "exercise": "swap",
        "bytesPerToken": constants.bytes_per_token,
        "tokensPerS": constants.tokens_per_s,
        "linkBytesPerS": constants.link_bytes_per_s,
        "syncMs": constants.sync_ms,
        "pageTokens": constants.page_tokens,
        "device": constants.device(host_pages=0).to_json(),  # the host pool: V's pages
        "rows": rows,
        "crossover": crossover,
        "searchedUpTo": up_to,
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


def render_swap(r: dict) -> str:
    lines = [
        "section 31.6, worked example: a preempted sequence, recomputed or swapped out and back, "
        "on this lab's engine",
        f"  {r['bytesPerToken'] // 1024} KiB of KV per token, {r['tokensPerS']:g} prefill "
        f"tokens/s, {r['linkBytesPerS'] / 1e9:g} GB/s link, C_s {r['syncMs']:g} ms per round trip, "
        f"pages of {r['pageTokens']} token(s)",
        "  each cost is the run's length minus that of the run without the preemption (ms):",
        f"    {'tokens':>8}{'pages':>8}{'recompute':>12}{'swap':>12}  cheaper",
    ]
    for row in r["rows"]:
        cheaper = "swap" if row["swapMs"] < row["recomputeMs"] else "recompute"
        lines.append(
            f"    {row['tokens']:>8}{row['pages']:>8}{row['recomputeMs']:>12.3f}"
            f"{row['swapMs']:>12.3f}  {cheaper}"
        )
    if r["crossover"] is None:
        lines.append(f"  swap is never the shorter run up to {r['searchedUpTo']} tokens")
    else:
        lines.append(
            f"  crossover: {r['crossover']} tokens, the shortest sequence whose swap run is the "
            "shorter one (runs of every length from 1 up)"
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
    ex6 = exercises.add_parser(
        "swap", help="section 31.6's worked example: recompute vs swap for a preempted sequence"
    )
    ex6.add_argument("--lengths", type=int_at_least(1), nargs="+", default=[16, 44, 45, 1024])
    ex6.add_argument(
        "--page-tokens", type=int_at_least(1), default=1, help="tokens per KV page moved (1)"
    )
    ex6.add_argument(
        "--up-to", type=int_at_least(1), default=4096, help="longest length tried (4096)"
    )
    for sub in (ex3, ex4, ex6):
        sub.add_argument("--json", action="store_true", help="print the numbers as JSON")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.exercise == "31.3":
        result, text = padding(args.lengths), render_padding
    elif args.exercise == "swap":
        constants = SwapConstants(page_tokens=args.page_tokens)
        result, text = swap_or_recompute(args.lengths, constants, args.up_to), render_swap
    else:
        if args.split >= args.new:
            parser.error(f"--split must be below --new ({args.new}), got {args.split}")
        result = attention_pairs(args.new, args.cached, args.split, args.chunks)
        text = render_pairs
    print(json.dumps(result, indent=1) if args.json else text(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
