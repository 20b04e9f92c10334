"""Paged KV cache: a pool of fixed-size pages and one block table per request.

Position ``p`` of request ``r`` lives in page ``table(r).pages[p // page_tokens]`` at offset
``p % page_tokens``. Pages come from a pool with a fixed capacity; asking for more than it has
left raises ``KVCacheFullError`` and changes nothing. A request's pages go back to the pool when
it is freed. With ``page_tokens`` at least as long as every request, each request owns one
contiguous buffer: that is the contiguous cache the tests compare against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from .config import ModelConfig


class KVCacheFullError(RuntimeError):
    """The page pool cannot hold what a batch needs; the message gives the counts."""


class PagePool:
    """Page ids ``0..capacity-1``; the lowest free ids are handed out first."""

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError(f"page pool capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._free = list(range(capacity - 1, -1, -1))

    @property
    def free(self) -> int:
        return len(self._free)

    @property
    def used(self) -> int:
        return self.capacity - self.free

    def can_allocate(self, pages: int) -> bool:
        return pages <= self.free

    def allocate(self, pages: int) -> list[int]:
        if not self.can_allocate(pages):
            raise KVCacheFullError(f"KV cache full: need {pages} page(s), {self.free} free")
        return [self._free.pop() for _ in range(pages)]

    def release(self, pages: list[int]) -> None:
        self._free.extend(reversed(pages))


@dataclass
class BlockTable:
    """The pages of one request, in position order, and how many positions are written."""

    pages: list[int] = field(default_factory=list)
    tokens: int = 0


class PagedKVCache:
    """K and V tensors shaped ``[layers, pages, page_tokens, kv_heads, head_dim]``."""

    def __init__(
        self,
        config: ModelConfig,
        pages: int,
        page_tokens: int,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
    ):
        if page_tokens < 1:
            raise ValueError(f"page_tokens must be >= 1, got {page_tokens}")
        self.page_tokens = page_tokens
        self.pool = PagePool(pages)
        shape = (config.layers, pages, page_tokens, config.kv_heads, config.head_dim)
        self.k = torch.zeros(shape, device=device, dtype=dtype)
        self.v = torch.zeros(shape, device=device, dtype=dtype)
        self.tables: dict[str, BlockTable] = {}

    def tokens(self, rid: str) -> int:
        table = self.tables.get(rid)
        return table.tokens if table else 0

    def pages_needed(self, rid: str, new_tokens: int) -> int:
        """Extra pages ``rid`` needs to hold ``new_tokens`` more positions."""
        table = self.tables.get(rid, BlockTable())
        total = math.ceil((table.tokens + new_tokens) / self.page_tokens)
        return total - len(table.pages)

    def reserve(self, growth: dict[str, int]) -> dict[str, list[int]]:
        """Make room for ``growth[rid]`` more positions of each request, all or nothing.

        Returns, per request, the flat slot index (``page * page_tokens + offset``) of each new
        position, in order; the positions count as written from now on.
        """
        need = sum(self.pages_needed(rid, n) for rid, n in growth.items())
        if not self.pool.can_allocate(need):
            raise KVCacheFullError(
                f"KV cache full: the batch needs {need} more page(s) of {self.page_tokens} "
                f"tokens, {self.pool.free} of {self.pool.capacity} free"
            )
        slots = {}
        for rid, n in growth.items():
            table = self.tables.setdefault(rid, BlockTable())
            table.pages += self.pool.allocate(self.pages_needed(rid, n))
            positions = range(table.tokens, table.tokens + n)
            slots[rid] = [
                table.pages[p // self.page_tokens] * self.page_tokens + p % self.page_tokens
                for p in positions
            ]
            table.tokens += n
        return slots

    def block_tables(self, rids: list[str], device) -> torch.Tensor:
        """``[len(rids), max pages]`` page ids, padded with page 0 (masked out by lengths)."""
        width = max(len(self.tables[rid].pages) for rid in rids)
        rows = [
            self.tables[rid].pages + [0] * (width - len(self.tables[rid].pages)) for rid in rids
        ]
        return torch.tensor(rows, dtype=torch.long, device=device)

    def free(self, rid: str) -> None:
        table = self.tables.pop(rid, None)
        if table is not None:
            self.pool.release(table.pages)
