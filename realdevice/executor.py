"""Run one ``servesim.Batch`` on the model: prefill chunks and decode steps, greedy tokens.

The executor owns each request's token ids: its prompt (pseudo-random ids drawn from a seed
derived from the request id, so every run sees the same prompt) and the tokens it generated.
A prefill chunk feeds the next ``tokens`` prompt ids at their positions; the chunk that ends the
prompt yields the first output token. A decode step feeds the newest generated token and yields
the next one. When a request has all its output tokens its KV pages go back to the pool.
Preemption by recompute (``batch.preempt``) frees a request's pages and keeps its generated
tokens; its next prefill target is the prompt followed by those tokens, and the chunk that
completes it yields the next token, exactly as an uninterrupted decode would.
Swapping (``batch.swap_out`` / ``batch.swap_in``, a device with a host pool) moves a request's
pages to host memory and back (``host_pool``): its tokens and positions stay, so a swapped-in
request decodes on as if it had never left.
A request with a shared ``prefix`` (unit 09) begins with each segment's own ids, the same in
every request that names the segment, so pages that the engine keys alike hold the same KV. A
chunk with ``cached`` positions (a prefix hit) starts after them: they are read from the pages
the hit shared, never computed again.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch

from .attention_plan import AttentionKind, Segment, plan_batch, varlen_available
from .host_pool import HostPool
from .kv_cache import PagedKVCache
from .model import Transformer


@dataclass
class RequestState:
    id: str
    prompt: list[int]
    output_tokens: int
    prefilled: int = 0
    generated: list[int] = field(default_factory=list)
    target: int = 0  # the prefill target: the prompt, or prompt + generated after a preemption
    decodes: int = 0  # decode steps since the last prefill

    def __post_init__(self):
        self.target = self.target or len(self.prompt)

    @property
    def context(self) -> int:
        """Positions in the KV cache (same rule as ``servesim.Sequence.context_tokens``)."""
        return self.prefilled + self.decodes

    @property
    def prefill_source(self) -> list[int]:
        """The ids a prefill feeds: the prompt, then (recompute) the tokens generated so far."""
        return self.prompt + self.generated[: self.target - len(self.prompt)]

    @property
    def finished(self) -> bool:
        return len(self.generated) >= self.output_tokens


def prompt_ids(rid: str, length: int, vocab: int) -> list[int]:
    """The prompt of request ``rid``: the same ids on every run and every device."""
    generator = torch.Generator().manual_seed(zlib.crc32(rid.encode("utf-8")))
    return torch.randint(vocab, (length,), generator=generator).tolist()


def shared_prompt_ids(rid: str, length: int, vocab: int, prefix=()) -> list[int]:
    """``prompt_ids`` after the ids of each ``(segment, tokens)`` of ``prefix``: a segment's
    first n ids are the same wherever it is cut (a sequential draw from the segment's seed)."""
    ids = []
    for segment, tokens in prefix:
        draw = random.Random(zlib.crc32(f"segment:{segment}".encode()))
        ids += [draw.randrange(vocab) for _ in range(tokens)]
    return ids + prompt_ids(rid, length - len(ids), vocab)


class ExecutionError(RuntimeError):
    """A batch the executor cannot run (unknown request, state out of step with the engine)."""


class Executor:
    def __init__(
        self,
        model: Transformer,
        cache: PagedKVCache,
        device,
        host: HostPool | None = None,
        attention: str = AttentionKind.EXACT,
    ):
        self.model = model
        self.attention = attention  # AttentionKind: how segments share attention calls
        self.varlen = attention == AttentionKind.EXACT and varlen_available(
            torch.device(device), model.embed.weight.dtype
        )
        self.cache = cache
        self.host = host  # where swapped-out requests' pages wait (None: the device cannot swap)
        self.device = torch.device(device)
        self.states: dict[str, RequestState] = {}
        self.outputs: dict[str, list[int]] = {}  # generated ids of finished requests
        self.last_logits: dict[str, torch.Tensor] = {}  # per request of the last batch (tests)

    def add_request(
        self, rid: str, input_tokens: int, output_tokens: int, prefix=(), prompt=None
    ) -> None:
        """A request to run: ``prompt`` (token ids, e.g. a served request's tokenized text) or
        else pseudo-random ids drawn from ``rid`` and its ``prefix`` segments."""
        if prompt is None:
            prompt = shared_prompt_ids(rid, input_tokens, self.model.config.vocab, prefix)
        elif len(prompt) != input_tokens:
            raise ExecutionError(f"request '{rid}': {len(prompt)} prompt ids, not {input_tokens}")
        self.states[rid] = RequestState(rid, list(prompt), output_tokens)

    def stop(self, rid: str) -> None:
        """``rid`` ends now with the tokens it generated (a served request's stop string
        matched): it is finished, and its pages go back as at its last token."""
        self._state(rid).output_tokens = len(self.states[rid].generated)
        self._finish(rid)

    def generated(self, rid: str) -> list[int]:
        state = self.states.get(rid)
        return list(state.generated) if state else list(self.outputs.get(rid, []))

    def run(self, batch, context: Mapping[str, int] | None = None) -> dict[str, int]:
        """Execute ``batch``; return the new token of every request that got one.

        ``context`` (the engine's view of each request's cached positions) is checked against
        the executor's own, so a replay that drifts out of step fails loudly.
        """
        for rid in getattr(batch, "preempt", ()):
            self.preempt(rid)
        for rid in getattr(batch, "swap_out", ()):
            self._swap(rid, out=True)
        for rid in getattr(batch, "swap_in", ()):
            self._swap(rid, out=False)
        segments = [self._decode_segment(rid) for rid in batch.decode]
        hits = {c.id: getattr(c, "cached", 0) for c in batch.prefill}
        segments += [self._prefill_segment(c.id, c.tokens, hits[c.id]) for c in batch.prefill]
        if context is not None:
            for seg in segments:
                engine = context.get(seg.id)
                if engine is None or engine + hits.get(seg.id, 0) != seg.start:
                    raise ExecutionError(
                        f"request '{seg.id}': engine says {context.get(seg.id)} cached positions, "
                        f"executor has {seg.start}"
                    )
        tokens, positions, plan = plan_batch(
            segments, self.cache, self.device, self.attention, self.varlen
        )
        logits = self.model(tokens, positions, plan, self.cache)
        picked = logits.argmax(dim=-1).tolist()  # waits for the device: the step is done here
        self.last_logits = {seg.id: row for seg, row in zip(segments, logits, strict=True)}
        return self._postprocess(batch, segments, picked)

    def preempt(self, rid: str) -> None:
        """Drop the request's KV pages; keep its tokens; it must prefill prompt + tokens again."""
        state = self._state(rid)
        self.cache.free(rid)
        state.target = len(state.prompt) + len(state.generated)
        state.prefilled = state.decodes = 0

    def drop(self, rid: str) -> None:
        """Forget a request that left without finishing (cancelled): free its pages."""
        self.cache.free(rid)
        if self.host is not None:
            self.host.free(rid)
        self.states.pop(rid, None)

    def _swap(self, rid: str, *, out: bool) -> None:
        self._state(rid)
        if self.host is None:
            raise ExecutionError(f"swap of '{rid}': this device has no host pool (hostPages 0)")
        if out != (rid in self.cache.tables) or out == self.host.holds(rid):
            where = "device" if out else "host"
            raise ExecutionError(f"swap {'out' if out else 'in'} of '{rid}': not on the {where}")
        if out:
            self.host.swap_out(self.cache, rid)
        else:
            self.host.swap_in(self.cache, rid)

    def _decode_segment(self, rid: str) -> Segment:
        state = self._state(rid)
        if state.prefilled < state.target or not state.generated or state.finished:
            raise ExecutionError(f"decode of '{rid}': it is not in its decode phase")
        return Segment(rid, [state.generated[-1]], state.context)

    def _prefill_segment(self, rid: str, tokens: int, cached: int = 0) -> Segment:
        state = self._state(rid)
        if cached:  # a prefix hit: those positions are in the pages the hit shared
            if state.prefilled:
                raise ExecutionError(f"prefill of '{rid}': a hit after {state.prefilled} tokens")
            self.cache.claim(rid, cached)
            state.prefilled = cached
        end = state.prefilled + tokens
        if tokens < 1 or end > state.target:
            raise ExecutionError(f"prefill of '{rid}': {tokens} tokens from {state.prefilled}")
        return Segment(rid, state.prefill_source[state.prefilled : end], state.prefilled)

    def _state(self, rid: str) -> RequestState:
        if rid not in self.states:
            raise ExecutionError(f"unknown or finished request '{rid}'")
        return self.states[rid]

    def _postprocess(self, batch, segments, picked) -> dict[str, int]:
        new_tokens = {}
        for seg, token in zip(segments, picked, strict=True):
            state = self.states[seg.id]
            if seg.id in batch.decode:
                state.generated.append(token)
                state.decodes += 1
                new_tokens[seg.id] = token
            else:
                state.prefilled += len(seg.tokens)
                if state.prefilled == state.target:
                    state.generated.append(token)
                    new_tokens[seg.id] = token
            if state.finished:
                self._finish(seg.id)
        return new_tokens

    def _finish(self, rid: str) -> None:
        self.cache.free(rid)
        self.outputs[rid] = self.states.pop(rid).generated
