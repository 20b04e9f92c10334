"""Chapter 31.3 worked numbers: a batch-cost estimator and prefill-versus-decode priority.

Loaded by ``chapter31.py`` (the notes-page plug-in). The estimator's constants are illustrative,
stated on the page as assumptions; what the page shows is what these functions compute from them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from servesim import rules


@dataclass(frozen=True)
class BatchCost:
    """t(batch) = fixed + per_token * sum(q) + per_pair * sum(attention pairs), in ms.

    The fixed part (reading the weights once, launching the round) is paid once per round, which
    is why the cost of a batch is not the sum of its members' costs run one by one.
    """

    fixed_ms: float = 2.0
    per_token_ms: float = 0.02
    per_pair_ms: float = 4e-6

    def round_ms(self, members: list[tuple[int, int]]) -> float:
        """Estimated time of one round whose members are ``(q_i, s_i)`` pairs."""
        tokens = sum(q for q, _ in members)
        pairs = sum(rules.attention_pairs(q, s) for q, s in members)  # formula 31.4
        return self.fixed_ms + self.per_token_ms * tokens + self.per_pair_ms * pairs

    def largest_chunk(self, decodes: list[tuple[int, int]], cached: int, target_ms: float) -> int:
        """Largest prompt chunk at context ``cached`` that keeps the round within ``target_ms``."""
        q = 0
        while self.round_ms([*decodes, (q + 1, cached)]) <= target_ms:
            q += 1
        return q


def estimator_example(cost: BatchCost = BatchCost()) -> dict:
    decodes = [(1, 1000)] * 8
    chunk = 256
    short, long_ = 0, 4096
    apart = sum(cost.round_ms([m]) for m in decodes) + cost.round_ms([(chunk, short)])
    return {
        "cost": cost,
        "decodes": len(decodes),
        "decode_context": decodes[0][1],
        "chunk": chunk,
        "short": short,
        "long": long_,
        "with_short_ms": cost.round_ms([*decodes, (chunk, short)]),
        "with_long_ms": cost.round_ms([*decodes, (chunk, long_)]),
        "apart_ms": apart,
        "target_ms": 10.0,
        "fit_short": cost.largest_chunk(decodes, short, 10.0),
        "fit_long": cost.largest_chunk(decodes, long_, 10.0),
    }


class Priority(Enum):
    DECODE_FIRST = "decode-first"
    PREFILL_FIRST = "prefill-first"
    RESERVED = "reserved"


def priority_rounds(
    priority: Priority, budget: int, decodes: int, prompt: int, reserve: int = 0, limit: int = 500
) -> dict:
    """Rounds of a token budget shared by ``decodes`` endless decodes and one waiting prompt.

    Each decode needs one token a round; the prompt needs ``prompt`` tokens before its first
    output. Decodes that do not fit wait, longest-waiting first. Returns the round in which the
    prompt finishes (None if not within ``limit`` rounds) and the longest gap, in rounds,
    between two served rounds of any decode while the prompt was waiting.
    """
    last = [0] * decodes
    longest_gap, left, finished = 1, prompt, None
    for rnd in range(1, limit + 1):
        if priority is Priority.PREFILL_FIRST:
            to_prompt = min(left, budget)
        elif priority is Priority.DECODE_FIRST:
            to_prompt = min(left, max(budget - decodes, 0))
        else:
            to_prompt = min(left, max(reserve, budget - decodes))
        slots = budget - to_prompt
        for i in sorted(range(decodes), key=lambda i: last[i])[:slots]:
            longest_gap = max(longest_gap, rnd - last[i])
            last[i] = rnd
        left -= to_prompt
        if left == 0:
            finished = rnd
            break
    waiting = (finished or limit) + 1
    longest_gap = max([longest_gap] + [waiting - t for t in last])
    return {"priority": priority.value, "prompt_rounds": finished, "decode_gap": longest_gap}


def priority_example(budget=256, decodes=256, prompt=1024, reserve=64) -> dict:
    rows = [
        priority_rounds(p, budget, decodes, prompt, reserve)
        for p in (Priority.DECODE_FIRST, Priority.PREFILL_FIRST, Priority.RESERVED)
    ]
    return {
        "budget": budget,
        "decodes": decodes,
        "prompt": prompt,
        "reserve": reserve,
        "rows": {r["priority"]: r for r in rows},
        "reserved_bound": math.ceil(prompt / reserve),
    }
