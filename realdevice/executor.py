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
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch

from .host_pool import HostPool
from .kv_cache import PagedKVCache
from .model import (
    AttentionKind,
    AttentionPlan,
    PackedKeys,
    SegmentGroup,
    Transformer,
    varlen_available,
)

MAX_GROUPS = 4  # attention calls per layer at most (see length_groups)


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


@dataclass(frozen=True)
class Segment:
    id: str
    tokens: list[int]
    start: int  # position of the first token


def prompt_ids(rid: str, length: int, vocab: int) -> list[int]:
    """The prompt of request ``rid``: the same ids on every run and every device."""
    generator = torch.Generator().manual_seed(zlib.crc32(rid.encode("utf-8")))
    return torch.randint(vocab, (length,), generator=generator).tolist()


def length_groups(key_lengths: list[int], max_groups: int = MAX_GROUPS) -> list[list[int]]:
    """Indices of the segments, grouped by key length so that padding stays bounded.

    Sorted by length, a group closes when the next length exceeds ``ratio`` times the group's
    shortest; ``ratio`` starts at 2 and grows until at most ``max_groups`` groups remain (each
    group is one attention call per layer, so fewer groups mean fewer kernel launches).
    """
    order = sorted(range(len(key_lengths)), key=lambda i: key_lengths[i])
    ratio = 2.0
    while True:
        groups = [[order[0]]]
        for i in order[1:]:
            if key_lengths[i] > ratio * key_lengths[groups[-1][0]]:
                groups.append([])
            groups[-1].append(i)
        if len(groups) <= max_groups:
            return [sorted(g) for g in groups]
        ratio *= 2.0


def shape_groups(shapes: list[tuple[int, int]]) -> list[list[int]]:
    """Indices of the segments grouped by equal shape (query count, page count): nothing in a
    group is padded beyond its own last page."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, shape in enumerate(shapes):
        groups.setdefault(shape, []).append(i)
    return list(groups.values())


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

    def add_request(self, rid: str, input_tokens: int, output_tokens: int) -> None:
        vocab = self.model.config.vocab
        self.states[rid] = RequestState(rid, prompt_ids(rid, input_tokens, vocab), output_tokens)

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
        segments += [self._prefill_segment(c.id, c.tokens) for c in batch.prefill]
        if context is not None:
            for seg in segments:
                if context.get(seg.id) != seg.start:
                    raise ExecutionError(
                        f"request '{seg.id}': engine says {context.get(seg.id)} cached positions, "
                        f"executor has {seg.start}"
                    )
        tokens, positions, plan = self._plan(segments)
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

    def _prefill_segment(self, rid: str, tokens: int) -> Segment:
        state = self._state(rid)
        end = state.prefilled + tokens
        if tokens < 1 or end > state.target:
            raise ExecutionError(f"prefill of '{rid}': {tokens} tokens from {state.prefilled}")
        return Segment(rid, state.prefill_source[state.prefilled : end], state.prefilled)

    def _state(self, rid: str) -> RequestState:
        if rid not in self.states:
            raise ExecutionError(f"unknown or finished request '{rid}'")
        return self.states[rid]

    def _plan(self, segments: list[Segment]):
        slots = self.cache.reserve({seg.id: len(seg.tokens) for seg in segments})
        rows, positions, flat_slots, last_rows, offsets = [], [], [], [], []
        for seg in segments:
            offsets.append(len(rows))
            rows += seg.tokens
            positions += range(seg.start, seg.start + len(seg.tokens))
            flat_slots += slots[seg.id]
            last_rows.append(len(rows) - 1)
        key_lengths = [seg.start + len(seg.tokens) for seg in segments]
        decode = varlen = None
        if self.attention == AttentionKind.PADDED:
            calls = length_groups(key_lengths)
        elif self.varlen:
            varlen, calls = self._packed(segments, offsets), []
        else:
            page = self.cache.page_tokens
            shapes = [
                (len(s.tokens), -(-k // page)) for s, k in zip(segments, key_lengths, strict=True)
            ]
            singles = [i for i, seg in enumerate(segments) if len(seg.tokens) == 1]
            if singles:
                decode = self._packed([segments[i] for i in singles], [offsets[i] for i in singles])
            chunks = [i for i in range(len(segments)) if len(segments[i].tokens) > 1]
            calls = [[chunks[j] for j in g] for g in shape_groups([shapes[i] for i in chunks])]
        groups = tuple(
            self._group([segments[i] for i in members], [offsets[i] for i in members])
            for members in calls
        )
        dev = self.device
        plan = AttentionPlan(
            slots=torch.tensor(flat_slots, device=dev),
            groups=groups,
            last_rows=torch.tensor(last_rows, device=dev),
            decode=decode,
            varlen=varlen,
        )
        return torch.tensor(rows, device=dev), torch.tensor(positions, device=dev), plan

    def _packed(self, segments: list[Segment], offsets: list[int]) -> PackedKeys:
        """The segments' keys, packed (see ``model.PackedKeys``)."""
        dev, page = self.device, self.cache.page_tokens
        table = self.cache.block_tables([seg.id for seg in segments], dev)  # [D, P]
        key_counts = [seg.start + len(seg.tokens) for seg in segments]
        query_counts = [len(seg.tokens) for seg in segments]
        lengths = torch.tensor(key_counts, device=dev)
        owner = torch.repeat_interleave(torch.arange(len(segments), device=dev), lengths)
        first = torch.cumsum(lengths, 0) - lengths  # packed index of each segment's first key
        position = torch.arange(owner.shape[0], device=dev) - first[owner]
        slots = table[owner, position // page] * page + position % page
        rows = [o + n - 1 for o, n in zip(offsets, query_counts, strict=True)]
        cumulative = lambda counts: torch.tensor(  # noqa: E731
            [0, *itertools.accumulate(counts)], dtype=torch.int32, device=dev
        )
        return PackedKeys(
            rows=torch.tensor(rows, device=dev),
            key_slots=slots,
            key_segment=owner,
            cu_q=cumulative(query_counts),
            cu_k=cumulative(key_counts),
            max_q=max(query_counts),
            max_k=max(key_counts),
        )

    def _group(self, segments: list[Segment], offsets: list[int]) -> SegmentGroup:
        dev = self.device
        width = max(len(seg.tokens) for seg in segments)
        query_rows, query_pos, real_rows = [], [], []
        for seg, offset in zip(segments, offsets, strict=True):
            n = len(seg.tokens)
            query_rows.append([offset + j if j < n else 0 for j in range(width)])
            # padding queries sit on the last real position so no mask row is empty
            query_pos.append([seg.start + min(j, n - 1) for j in range(width)])
            real_rows += range(offset, offset + n)
        block_tables = self.cache.block_tables([seg.id for seg in segments], dev)
        key_pos = torch.arange(block_tables.shape[1] * self.cache.page_tokens, device=dev)
        query_pos_t = torch.tensor(query_pos, device=dev)
        lengths = torch.tensor([len(seg.tokens) for seg in segments], device=dev)
        return SegmentGroup(
            rows=torch.tensor(real_rows, device=dev),
            block_tables=block_tables,
            query_rows=torch.tensor(query_rows, device=dev),
            query_valid=torch.arange(width, device=dev)[None, :] < lengths[:, None],
            mask=(key_pos[None, None, :] <= query_pos_t[:, :, None])[:, None],
        )

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
                self.cache.free(seg.id)
                self.outputs[seg.id] = self.states.pop(seg.id).generated
        return new_tokens
