"""The device rules, written once: what a step costs, what a sequence's KV cache holds, what a
step may hold, and which tokens it emits.

The engine (``engine.py``), the grader's replay (which works from the run file alone), the
real-device runner and the tests all call these functions, so a rule changes in one place.
They take plain numbers (and a ``DeviceProfile``-like object), never the engine's state.

- Duration of a step: ``overheadMs + prefillMsPerToken * P + (decodeBatchMs + decodeMsPerSeq * n)``
  (the decode part only when n > 0), plus two context terms, zero unless a profile sets them
  (calibrated ones do): ``prefillMsPerContextToken`` per attention pair of the prefill chunks
  (formula 31.4) and ``decodeMsPerContextToken`` per cached position a decoded sequence reads.
- Cache: a sequence holds ``prefilled + decodes`` positions (prefill tokens of its current
  prefill target, plus one per decode since); ``ceil(c / pageTokens)`` pages for c positions.
- Caps checked after the step (before releases): at most K holders, their pages within M; the
  step's new positions (one per decode, each prefill token) within the budget B.
- Tokens: the chunk that completes a prefill emits one token, each decode emits one.
- Transfers (31.6, devices with a host pool of ``hostPages``): a step that swaps sequences out
  or in pays ``swapMsPerPage`` per page it moves and ``swapSyncMs`` per sequence it moves, on
  top of its compute; a swapped-out sequence holds host pages, not device pages or a K slot.
  The host pool is checked after the step like the others.
- Preemption by recompute: the cache is dropped at the start of the step; the new prefill
  target is the prompt plus every token emitted so far. A run counts each preemption
  (``recomputes``) and the positions it dropped (``recomputedTokens``: the work done again).
  Which holder is preempted, and where it waits, is the policy's and the queue's business
  (``queues.py``), not a device rule.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import astuple, dataclass


@dataclass(frozen=True)
class StepTerms:
    """What a step's cost depends on, summed over its members (the chapter's {q_i, s_i}).

    ``attention_pairs``: formula 31.4 summed over the prefill chunks, ``q * s + q * (q + 1) / 2``
    for a chunk of q new positions after s cached ones (query r of the chunk sees the s cached
    keys and the r new ones up to itself). ``decode_context``: the cached positions each decoded
    sequence reads, summed. ``moved_pages`` and ``moved_seqs``: the KV pages the step moves
    between device and host and the sequences they belong to (``transfer_terms``). Terms add
    (``+``), so a policy can price a candidate step member by member with ``chunk_terms`` and
    ``decode_terms``.
    """

    prefill_tokens: int = 0
    attention_pairs: int = 0
    decode_seqs: int = 0
    decode_context: int = 0
    moved_pages: int = 0
    moved_seqs: int = 0

    def __add__(self, other: StepTerms) -> StepTerms:
        return StepTerms(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))


def attention_pairs(new: int, cached: int) -> int:
    """Key-query pairs of causal attention for ``new`` positions after ``cached`` ones (31.4)."""
    return new * cached + new * (new + 1) // 2


def chunk_terms(tokens: int, cached: int) -> StepTerms:
    """A prefill chunk of ``tokens`` positions on top of ``cached`` ones."""
    return StepTerms(prefill_tokens=tokens, attention_pairs=attention_pairs(tokens, cached))


def decode_terms(cached: int) -> StepTerms:
    """One decoded sequence whose cache holds ``cached`` positions."""
    return StepTerms(decode_seqs=1, decode_context=cached)


def step_terms(batch, context: Mapping[str, int]) -> StepTerms:
    """The terms of ``batch``; ``context`` maps each member to its cached positions."""
    prefill = batch.prefill
    pairs = (
        sum(attention_pairs(chunk.tokens, context[chunk.id]) for chunk in prefill) if prefill else 0
    )
    return StepTerms(
        batch.prefill_tokens, pairs, len(batch.decode), sum(map(context.__getitem__, batch.decode))
    )


def transfer_terms(device, batch, context: Mapping[str, int]) -> StepTerms:
    """The pages ``batch`` swaps out or in (each moved sequence's whole cache) and how many
    sequences they belong to; ``context`` maps each moved sequence to its cached positions."""
    moved = getattr(batch, "moved", ())
    pages = sum(pages_for(device, context[rid]) for rid in moved)
    return StepTerms(moved_pages=pages, moved_seqs=len(moved))


def work_ms(device, terms: StepTerms) -> float:
    """Device time of a step with ``terms``, without the submission overhead: the estimate
    t-hat of section 31.3, with the profile's coefficients, plus the step's transfers."""
    work = _affine_work_ms(device, terms.prefill_tokens, terms.decode_seqs)
    if device.prefill_ms_per_context_token:
        work += device.prefill_ms_per_context_token * terms.attention_pairs
    if device.decode_ms_per_context_token:
        work += device.decode_ms_per_context_token * terms.decode_context
    if terms.moved_seqs:
        work += device.swap_ms_per_page * terms.moved_pages + device.swap_sync_ms * terms.moved_seqs
    return work


def _affine_work_ms(device, prefill_tokens: int, decode_seqs: int) -> float:
    work = device.prefill_ms_per_token * prefill_tokens
    if decode_seqs:
        work += device.decode_batch_ms + device.decode_ms_per_seq * decode_seqs
    return work


def reads_context(device) -> bool:
    """Whether the cost of a step depends on the cached positions (calibrated profiles)."""
    return bool(device.prefill_ms_per_context_token or device.decode_ms_per_context_token)


def step_work_ms(device, batch, context: Mapping[str, int]) -> float:
    """Device time of ``batch`` without the submission overhead.

    ``context`` maps each request in the batch (and each it swaps) to the positions already in
    its KV cache; it is read only by profiles with context costs (zero in the lab's devices) and
    by batches that swap, so the engine may pass an empty mapping for the others.
    """
    moves = getattr(batch, "moved", ())
    if not moves and not reads_context(device):  # the engine's hot path: no terms to gather
        return _affine_work_ms(device, batch.prefill_tokens, len(batch.decode))
    terms = step_terms(batch, context)
    if moves:
        terms += transfer_terms(device, batch, context)
    return work_ms(device, terms)


def step_duration_ms(device, batch, context: Mapping[str, int]) -> float:
    return device.overhead_ms + step_work_ms(device, batch, context)


def pages_for(device, tokens: int) -> int:
    """KV pages that ``tokens`` cached positions take (``DeviceProfile.pages_for``)."""
    return math.ceil(tokens / device.page_tokens)


def pages_added(device, cached: int, new: int) -> int:
    """Pages a cache of ``cached`` positions gains with ``new`` more (one more position adds a
    page exactly when the cache fills its last page)."""
    if new == 1:
        return 1 if cached % device.page_tokens == 0 else 0
    return pages_for(device, cached + new) - pages_for(device, cached)


def page_opens(device, cached: int, steps: int) -> range:
    """Which of ``steps`` single decodes of a cache of ``cached`` positions (1-based: the j-th
    decodes with ``cached + j - 1`` positions) add a page (``pages_added`` of one position)."""
    return range((-cached) % device.page_tokens + 1, steps + 1, device.page_tokens)


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


@dataclass(slots=True)  # not frozen: every step builds two, and frozen fields are slow to set
class Occupancy:
    """What the holders of KV take: how many there are and their pages, and the host pages of
    the swapped-out sequences."""

    active: int = 0
    pages: int = 0
    host: int = 0


def occupancy_after(
    device,
    before: Occupancy,
    dropped: Iterable[int],
    growth: Iterable[tuple[int, int]],
    swapped_out: Iterable[int] = (),
    swapped_in: Iterable[int] = (),
) -> Occupancy:
    """Holders and pages right after a step, before any sequence is released.

    ``before`` is the occupancy when the step starts; ``dropped`` the cache sizes of the
    sequences it preempts; ``swapped_out`` and ``swapped_in`` those of the sequences whose pages
    it moves to the host and back; ``growth`` one ``(cache before, new positions)`` pair per
    member of the batch (a decode adds 1, a chunk its tokens; cache 0 means the sequence starts
    holding). Without a page pool the device pages are not counted (``before.pages`` is
    returned unchanged).
    """
    active, pages, host = before.active, before.pages, before.host
    count = device.kv_pages is not None
    for cached in dropped:
        active -= 1
        pages -= pages_for(device, cached) if count else 0
    for sign, caches in ((-1, swapped_out), (1, swapped_in)):
        for cached in caches:
            moved = pages_for(device, cached)
            active += sign
            pages += sign * moved if count else 0
            host -= sign * moved
    for cached, new in growth:
        if cached == 0:
            active += 1
        pages += pages_added(device, cached, new) if count else 0
    return Occupancy(active, pages, host)


def cap_violation(
    device, after: Occupancy, new_positions: int, budget: int | None
) -> tuple[str, str] | None:
    """``(limit, reason)`` when a step breaks the token budget (``budget``), the active cap
    (``maxActive``), the page pool (``kvPages``) or the host pool (``hostPages``); None when it
    fits."""
    if budget is not None and new_positions > budget:
        return "budget", f"{new_positions} new positions, token budget {budget}"
    if device.max_active is not None and after.active > device.max_active:
        return "maxActive", f"{after.active} active sequences, cap {device.max_active}"
    if device.kv_pages is not None and after.pages > device.kv_pages:
        return "kvPages", f"needs {after.pages} KV pages, budget {device.kv_pages}"
    if after.host > device.host_pages:
        return "hostPages", f"needs {after.host} host pages, host pool {device.host_pages}"
    return None
