"""Paged KV cache: a pool of fixed-size pages and one block table per request.

Position ``p`` of request ``r`` lives in page ``table(r).pages[p // page_tokens]`` at offset
``p % page_tokens``. Pages come from a pool with a fixed capacity; asking for more than it has
left raises ``KVCacheFullError`` and changes nothing. A request's pages go back to the pool when
it is freed. With ``page_tokens`` at least as long as every request, each request owns one
contiguous buffer: that is the contiguous cache the tests compare against.

A cache ``driven`` by the engine's page operations (a device with prefix caching, unit 09) never
chooses a page itself: ``take``, ``share`` and ``unref`` apply the engine's own ``take``,
``hit`` and ``release`` records (``realdevice.pageops``), pages carry reference counts, a page
shared by several tables is held once, and one released with no reference left is an error
(a release twice). ``reserve`` then only places positions in the pages the engine gave, and
``free`` leaves the tables to the engine's releases.
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

    def take(self, page: int) -> None:
        """Take the named free page (a driven cache: the engine chose it)."""
        try:
            self._free.remove(page)
        except ValueError:
            raise KVCacheFullError(f"page {page} is not free in the real pool") from None


class PageTableError(RuntimeError):
    """A driven cache and the engine's page operations disagree (the message says where)."""


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
        self.driven = False  # True: pages follow the engine's page operations (module doc)
        self.refs: dict[int, int] = {}  # page -> tables holding it (a driven cache)

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
        if self.driven and need > 0:
            raise PageTableError(
                f"the batch needs {need} page(s) the engine's page operations did not give"
            )
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
        """``rid``'s pages go back to the pool (a driven cache: only its releases do that)."""
        if self.driven:
            return
        table = self.tables.pop(rid, None)
        if table is not None:
            self.pool.release(table.pages)

    # -- a driven cache: the engine's page operations ---------------------------------------

    def take(self, rid: str, page: int) -> None:
        """``rid``'s table gets free page ``page``, one reference."""
        self.pool.take(page)
        self.refs[page] = 1
        self.tables.setdefault(rid, BlockTable()).pages.append(page)

    def share(self, rid: str, page: int) -> None:
        """A prefix hit: ``rid``'s table gets ``page`` and its KV data as they are, one more
        reference (a cached page nobody held leaves the free pool again, its data intact)."""
        if self.refs.get(page, 0) == 0:
            self.pool.take(page)
        self.refs[page] = self.refs.get(page, 0) + 1
        self.tables.setdefault(rid, BlockTable()).pages.append(page)

    def claim(self, rid: str, positions: int) -> None:
        """``rid`` starts with ``positions`` cached positions, in the pages its hits shared."""
        table = self.tables.get(rid)
        if table is None or table.tokens or len(table.pages) * self.page_tokens < positions:
            raise PageTableError(f"'{rid}' claims {positions} cached positions it does not hold")
        table.tokens = positions

    def unref(self, rid: str, page: int) -> None:
        """``rid`` lets go of ``page`` (its last one: releases go last page first); the page
        returns to the pool when no table holds it."""
        table = self.tables.get(rid)
        if table is None or not table.pages or table.pages[-1] != page:
            raise PageTableError(f"'{rid}' releases page {page}, which is not its last page")
        if self.refs.get(page, 0) < 1:
            raise PageTableError(f"page {page} released with no reference left (twice)")
        table.pages.pop()
        if not table.pages:
            del self.tables[rid]
        self.refs[page] -= 1
        if self.refs[page] == 0:
            del self.refs[page]
            self.pool.release([page])
