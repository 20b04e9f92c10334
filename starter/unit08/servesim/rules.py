"""The device rules, written once: what a step costs, what a sequence's KV cache holds, what a
step may hold, and which tokens it emits.

The engine (``engine.py``), the grader's replay (which works from the run file alone), the
real-device runner and the tests all call these functions, so a rule changes in one place.
They take plain numbers (and a ``DeviceProfile``-like object), never the engine's state.

- Duration of a step: ``overheadMs + prefillMsPerToken * P + (decodeBatchMs + decodeMsPerSeq * n)``
  (the decode part only when n > 0), plus the per-context-token terms of calibrated profiles.
- Cache: a sequence holds ``prefilled + decodes`` positions (prefill tokens of its current
  prefill target, plus one per decode since); ``ceil(c / pageTokens)`` pages for c positions.
- Caps checked after the step (before releases): at most K holders, their pages within M; the
  step's new positions (one per decode, each prefill token) within the budget B.
- Tokens: the chunk that completes a prefill emits one token, each decode emits one.
- Preemption by recompute: the cache is dropped at the start of the step; the new prefill
  target is the prompt plus every token emitted so far. A run counts each preemption
  (``recomputes``) and the positions it dropped (``recomputedTokens``: the work done again).
  Which holder is preempted, and where it waits, is the policy's and the queue's business
  (``queues.py``), not a device rule.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


def step_work_ms(device, batch, context: Mapping[str, int]) -> float:
    """Device time of ``batch`` without the submission overhead.

    ``context`` maps each request in the batch to the positions already in its KV cache; it is
    read only by calibrated profiles (per-context-token costs, zero in the lab's devices).
    """
    work = device.prefill_ms_per_token * batch.prefill_tokens
    if batch.decode:
        work += device.decode_batch_ms + device.decode_ms_per_seq * len(batch.decode)
    if device.prefill_ms_per_context_token:
        work += device.prefill_ms_per_context_token * prefill_context_pairs(batch, context)
    if device.decode_ms_per_context_token:
        cached = sum(context[rid] for rid in batch.decode)
        work += device.decode_ms_per_context_token * cached
    return work


def reads_context(device) -> bool:
    """Whether the cost of a step depends on the cached positions (calibrated profiles)."""
    return bool(device.prefill_ms_per_context_token or device.decode_ms_per_context_token)


def step_duration_ms(device, batch, context: Mapping[str, int]) -> float:
    return device.overhead_ms + step_work_ms(device, batch, context)


def prefill_context_pairs(batch, context: Mapping[str, int]) -> int:
    """Positions each prefill token of ``batch`` finds before it, summed: a chunk of ``n``
    tokens on top of ``c`` cached ones contributes ``n * c + n * (n - 1) / 2``."""
    return sum(
        chunk.tokens * context[chunk.id] + chunk.tokens * (chunk.tokens - 1) // 2
        for chunk in batch.prefill
    )


def pages_for(device, tokens: int) -> int:
    return math.ceil(tokens / device.page_tokens)


def pages_added(device, cached: int, new: int) -> int:
    """Pages a cache of ``cached`` positions gains with ``new`` more (one more position adds a
    page exactly when the cache fills its last page)."""
    if new == 1:
        return 1 if cached % device.page_tokens == 0 else 0
    return pages_for(device, cached + new) - pages_for(device, cached)


def never_fits(device, input_tokens: int, max_output_tokens: int) -> bool:
    """With a page pool, a request whose declared maximum could not fit even alone."""
    return device.kv_pages is not None and (
        pages_for(device, input_tokens + max_output_tokens) > device.kv_pages
    )


def recompute_target(input_tokens: int, emitted: int) -> int:
    """The prefill a preempted sequence needs: its prompt and every token it emitted."""
    return input_tokens + emitted


def emits_on_prefill(prefilled_before: int, tokens: int, target: int) -> bool:
    """The chunk that completes the prefill target emits the sequence's next token."""
    return prefilled_before < target <= prefilled_before + tokens


@dataclass(frozen=True)
class Occupancy:
    """What the holders of KV take: how many there are and their pages."""

    active: int = 0
    pages: int = 0


def occupancy_after(
    device,
    before: Occupancy,
    dropped: Iterable[int],
    growth: Iterable[tuple[int, int]],
) -> Occupancy:
    """Holders and pages right after a step, before any sequence is released.

    ``before`` is the occupancy when the step starts; ``dropped`` the cache sizes of the
    sequences it preempts; ``growth`` one ``(cache before, new positions)`` pair per member of
    the batch (a decode adds 1, a chunk its tokens; cache 0 means the sequence starts holding).
    Without a page pool the pages are not counted (``before.pages`` is returned unchanged).
    """
    active, pages, count = before.active, before.pages, device.kv_pages is not None
    for cached in dropped:
        active -= 1
        pages -= pages_for(device, cached) if count else 0
    for cached, new in growth:
        if cached == 0:
            active += 1
        pages += pages_added(device, cached, new) if count else 0
    return Occupancy(active, pages)


def cap_violation(
    device, after: Occupancy, new_positions: int, budget: int | None
) -> tuple[str, str] | None:
    """``(limit, reason)`` when a step breaks the token budget (``budget``), the active cap
    (``maxActive``) or the page pool (``kvPages``); None when it fits."""
    if budget is not None and new_positions > budget:
        return "budget", f"{new_positions} new positions, token budget {budget}"
    if device.max_active is not None and after.active > device.max_active:
        return "maxActive", f"{after.active} active sequences, cap {device.max_active}"
    if device.kv_pages is not None and after.pages > device.kv_pages:
        return "kvPages", f"needs {after.pages} KV pages, budget {device.kv_pages}"
    return None
