"""The attention plan of one batch: where its tokens go in the paged KV cache and which
attention calls its segments share.

A *segment* is a run of consecutive positions of one request (a prefill chunk, or the single
token of a decode step). Token rows are laid out segment after segment; how segments are
grouped into calls is the ``AttentionKind``: exact (each segment over its own keys only; on
CUDA with ``torch.nn.attention.varlen``, the whole batch in one fused call) or padded (groups
of similar key length, padded to their widest). ``plan_batch`` makes the plan the model's
attention (``model.Attention``) follows.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from .kv_cache import PagedKVCache

MAX_GROUPS = 4  # attention calls per layer at most (see length_groups)


@dataclass(frozen=True)
class Segment:
    id: str
    tokens: list[int]
    start: int  # position of the first token


@dataclass(frozen=True)
class SegmentGroup:
    """Segments that attend in one call (padded to the group's longest, where lengths differ).

    ``S`` segments, ``Q`` = longest segment, ``K`` = key columns gathered per segment (its
    pages, padded to the widest block table of the group).
    """

    rows: torch.Tensor  # [queries] token row of each real query, in (segment, position) order
    block_tables: torch.Tensor  # [S, P] page ids, padded
    query_rows: torch.Tensor  # [S, Q] token row of each query (0 for padding)
    query_valid: torch.Tensor  # [S, Q] bool: a real query, not padding
    mask: torch.Tensor  # [S, 1, Q, K] bool: True where the query may attend the key


@dataclass(frozen=True)
class PackedKeys:
    """Segments attended in one packed pass, each over its own keys only.

    Every segment's keys are gathered into one packed run (``key_slots``, tagged with their
    segment by ``key_segment``): the work is the sum of the segments' own lengths, with no
    padding and no call per segment. On the CPU it holds the decode segments (one query each,
    ``rows``); on CUDA with ``torch.nn.attention.varlen`` it holds every segment of the batch
    (queries are the token rows in order, ``cu_q`` / ``cu_k`` the cumulative lengths).
    """

    rows: torch.Tensor  # [D] token row of each segment's (last) query
    key_slots: torch.Tensor  # [N] flat cache slot of every key of every segment
    key_segment: torch.Tensor  # [N] which segment each key belongs to
    cu_q: torch.Tensor | None = None  # [D + 1] int32 cumulative query counts (varlen only)
    cu_k: torch.Tensor | None = None  # [D + 1] int32 cumulative key counts (varlen only)
    max_q: int = 1
    max_k: int = 1


def varlen_available(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether torch's fused variable-length attention (flash) serves this device and dtype."""
    if device.type != "cuda" or dtype not in (torch.float16, torch.bfloat16):
        return False
    try:
        from torch.nn.attention.varlen import varlen_attn  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.get_device_capability(device) >= (8, 0)


class AttentionKind:
    """How the executor groups a batch's segments into attention calls (``AttentionPlan``)."""

    # each segment attends over its own keys only, so its cost follows its own q_i and s_i
    # (eq. 31.4): decode segments in one packed pass (PackedKeys), prefill chunks in calls of
    # equal shape (query count, page count), padded at most to their own last page
    EXACT = "exact"
    # groups of similar key length (within a ratio, at most 4 groups) padded to their widest:
    # the earlier path, kept as the reference the exact path is tested and benchmarked against
    PADDED = "padded"


@dataclass(frozen=True)
class AttentionPlan:
    """Where a batch's tokens go in the cache and what each query may attend to.

    Token rows are laid out segment after segment; ``groups`` are the attention calls (see
    ``AttentionKind`` for how segments are grouped).
    """

    slots: torch.Tensor  # [T] flat cache slot (page * page_tokens + offset) of each token
    groups: tuple[SegmentGroup, ...]
    last_rows: torch.Tensor  # [segments] token row of each segment's last token
    decode: PackedKeys | None = None  # exact path: the decode segments (not in ``groups``)
    varlen: PackedKeys | None = None  # exact path on CUDA: every segment, one fused call


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


def plan_batch(
    segments: list[Segment], cache: PagedKVCache, device: torch.device, attention: str, varlen: bool
):
    """``(tokens, positions, plan)`` of ``segments``: their token ids and positions, row after
    row, and the ``AttentionPlan`` (``varlen``: the fused call serves this device)."""
    slots = cache.reserve({seg.id: len(seg.tokens) for seg in segments})
    rows, positions, flat_slots, last_rows, offsets = [], [], [], [], []
    for seg in segments:
        offsets.append(len(rows))
        rows += seg.tokens
        positions += range(seg.start, seg.start + len(seg.tokens))
        flat_slots += slots[seg.id]
        last_rows.append(len(rows) - 1)
    key_lengths = [seg.start + len(seg.tokens) for seg in segments]
    decode = packed = None
    if attention == AttentionKind.PADDED:
        calls = length_groups(key_lengths)
    elif varlen:
        packed, calls = packed_keys(segments, offsets, cache, device), []
    else:
        page = cache.page_tokens
        shapes = [
            (len(s.tokens), -(-k // page)) for s, k in zip(segments, key_lengths, strict=True)
        ]
        singles = [i for i, seg in enumerate(segments) if len(seg.tokens) == 1]
        if singles:
            decode = packed_keys(
                [segments[i] for i in singles], [offsets[i] for i in singles], cache, device
            )
        chunks = [i for i in range(len(segments)) if len(segments[i].tokens) > 1]
        calls = [[chunks[j] for j in g] for g in shape_groups([shapes[i] for i in chunks])]
    groups = tuple(
        segment_group([segments[i] for i in members], [offsets[i] for i in members], cache, device)
        for members in calls
    )
    plan = AttentionPlan(
        slots=torch.tensor(flat_slots, device=device),
        groups=groups,
        last_rows=torch.tensor(last_rows, device=device),
        decode=decode,
        varlen=packed,
    )
    return torch.tensor(rows, device=device), torch.tensor(positions, device=device), plan


def packed_keys(
    segments: list[Segment], offsets: list[int], cache: PagedKVCache, dev: torch.device
) -> PackedKeys:
    """The segments' keys, packed (see ``PackedKeys``); ``offsets``: each one's first row."""
    page = cache.page_tokens
    table = cache.block_tables([seg.id for seg in segments], dev)  # [D, P]
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


def segment_group(
    segments: list[Segment], offsets: list[int], cache: PagedKVCache, dev: torch.device
) -> SegmentGroup:
    """One attention call over ``segments``, padded to the longest segment and the widest block
    table; ``offsets``: each segment's first row."""
    width = max(len(seg.tokens) for seg in segments)
    query_rows, query_pos, real_rows = [], [], []
    for seg, offset in zip(segments, offsets, strict=True):
        n = len(seg.tokens)
        query_rows.append([offset + j if j < n else 0 for j in range(width)])
        # padding queries sit on the last real position so no mask row is empty
        query_pos.append([seg.start + min(j, n - 1) for j in range(width)])
        real_rows += range(offset, offset + n)
    block_tables = cache.block_tables([seg.id for seg in segments], dev)
    key_pos = torch.arange(block_tables.shape[1] * cache.page_tokens, device=dev)
    query_pos_t = torch.tensor(query_pos, device=dev)
    lengths = torch.tensor([len(seg.tokens) for seg in segments], device=dev)
    return SegmentGroup(
        rows=torch.tensor(real_rows, device=dev),
        block_tables=block_tables,
        query_rows=torch.tensor(query_rows, device=dev),
        query_valid=torch.arange(width, device=dev)[None, :] < lengths[:, None],
        mask=(key_pos[None, None, :] <= query_pos_t[:, :, None])[:, None],
    )
