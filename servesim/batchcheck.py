"""Checking a returned batch before it runs: types, members, phases, prefix claims, the device's
rules (``view.violation``). Each refusal is one ``PolicyError`` sentence."""

from __future__ import annotations

from . import contract
from .batch import Batch
from .contract import PolicyError
from .sequence import Phase, Sequence
from .view import SchedulerView


def check_batch(
    batch, view: SchedulerView, who: str = "the policy", known=None, limits: bool = True
) -> tuple[int, ...]:
    """Raise ``PolicyError`` unless ``batch`` can run now; return each chunk's first token index.

    ``who`` names the policy in the message of a broken contract (wrong types, ids of no
    request); ``known`` holds the id of every request of the run so far (None: not checked).
    """
    problem = contract.batch_problem(batch)
    if problem is not None:
        raise PolicyError(contract.sentence(who, problem))
    if not batch.decode and not batch.prefill:  # a step that only moves pages is empty too
        raise PolicyError(f"empty batch {_at(view)} although work is waiting")
    ids = [*batch.ids, *batch.preempt, *batch.swap_out]
    if batch.swap_in:  # a sequence swapped in may decode in the same step
        ids += [rid for rid in batch.swap_in if rid not in batch.decode]
    if len(set(ids)) != len(ids) or len(set(batch.swap_in)) != len(batch.swap_in):
        raise PolicyError(f"a request appears twice in the batch {_at(view)}")
    live = view.live
    if live is None:
        live = {s.id: s for s in (*view.waiting, *view.running, *view.swapped)}
    try:
        return _check_members(batch, view, live, limits)
    except PolicyError:
        if known is not None:  # a refused id that names no request at all says so instead
            _check_known(batch, live, known, who)
        raise


def _check_members(batch: Batch, view: SchedulerView, live, limits: bool) -> tuple[int, ...]:
    """``check_batch`` for a batch of the right types: what each member asks is allowed."""
    for rid in batch.preempt:
        if rid not in live or not live[rid].holds_kv:
            raise PolicyError(f"preempt of '{rid}' {_at(view)}: it holds no KV cache", "preempt")
    for rid in batch.swap_out:
        if rid not in live or live[rid].phase is not _DECODE:
            raise PolicyError(
                f"swap out of '{rid}' {_at(view)}: only a running sequence can be swapped",
                "swapOut",
            )
    for rid in batch.swap_in:
        if rid not in live or live[rid].phase is not _SWAPPED:
            raise PolicyError(f"swap in of '{rid}' {_at(view)}: it is not swapped out", "swapIn")
    for rid in batch.decode:
        seq = live.get(rid)
        if seq is None or seq.phase is not _DECODE:  # only a swapped one swapped in may decode
            phase = None if seq is None else seq.phase
            if phase is _SWAPPED and rid not in batch.swap_in:
                raise PolicyError(
                    f"decode of '{rid}' {_at(view)}: it is swapped out (swap it in first)",
                    "decode while swapped out",
                )
            if phase is not _SWAPPED:
                raise PolicyError(
                    f"decode of '{rid}' {_at(view)}: it is not running", "decode before first token"
                )
    starts = []
    for chunk in batch.prefill:
        seq = live.get(chunk.id)
        if seq is None or seq.phase is not _PREFILL:
            raise PolicyError(
                f"prefill of '{chunk.id}' {_at(view)}: it has not arrived or needs no prefill",
                "prefill before arrival" if seq is None else "prefill beyond inputTokens",
            )
        cached = _cached(chunk, seq, view)
        ok = isinstance(chunk.tokens, int) and 1 <= chunk.tokens <= seq.remaining_prefill - cached
        if not ok:
            raise PolicyError(
                f"prefill of '{chunk.id}' {_at(view)}: {chunk.tokens!r} tokens, "
                f"must be 1..{seq.remaining_prefill - cached}",
                "prefill beyond inputTokens",
            )
        starts.append(seq.prefilled + cached)
    problem = view.violation(batch) if limits else None
    if problem is not None:
        raise PolicyError(f"batch {_at(view)}: {problem}")
    return tuple(starts)


def _cached(chunk, seq: Sequence, view: SchedulerView) -> int:
    """A chunk's prefix-cache claim, if it may make one: whole pages, for a sequence
    that starts its (re)prefill, on a device with a prefix cache (the pool checks the rest)."""
    cached = chunk.cached
    if cached == 0:
        return 0
    if type(cached) is not int or cached < 0 or cached % view.device.page_tokens:
        raise PolicyError(
            f"prefill of '{chunk.id}' {_at(view)}: cached must be whole pages", "prefix hit"
        )
    if not view.device.prefix_caching or seq.prefilled:
        raise PolicyError(
            f"prefill of '{chunk.id}' {_at(view)}: cached positions need a device with "
            "prefixCaching and a sequence that starts its prefill",
            "prefix hit",
        )
    return cached


def _check_known(batch: Batch, live, known, who: str) -> None:
    """Every id the batch names is a request of the run (arrived or not)."""
    for member in ("decode", "preempt", "swap_out", "swap_in"):
        for rid in getattr(batch, member):
            if rid not in live and rid not in known:
                raise PolicyError(contract.sentence(who, contract.unknown_id(member, rid)))
    for chunk in batch.prefill:
        if chunk.id not in live and chunk.id not in known:
            raise PolicyError(contract.sentence(who, contract.unknown_id("prefill", chunk.id)))


def _at(view: SchedulerView) -> str:
    return f"at {view.now_ms:.2f} ms"


# Looked up once: reading a member off an Enum class is slow where every step does it.
_PREFILL, _DECODE, _SWAPPED = Phase.PREFILL, Phase.DECODE, Phase.SWAPPED
