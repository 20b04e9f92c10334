"""Host memory for swapped-out KV (31.6): a page pool of its own, and the moves both ways.

``swap_out(cache, rid)`` copies every page of ``rid`` from the device cache into host pages,
then frees the device pages; ``swap_in(cache, rid)`` takes device pages again, copies the host
pages back and frees those. The request's positions are unchanged, so attention after a swap-in
reads exactly what it wrote before. Both moves are all or nothing: a pool without room raises
``KVCacheFullError`` and changes nothing. On a GPU the host tensors are pinned, so the copies
are DMA transfers, the real cost the virtual device's ``swapMsPerPage`` stands for.
"""

from __future__ import annotations

import torch

from .config import ModelConfig
from .kv_cache import BlockTable, KVCacheFullError, PagedKVCache, PagePool


class HostPool:
    """K and V on the host, ``[layers, pages, page_tokens, kv_heads, head_dim]`` like the cache."""

    def __init__(self, config: ModelConfig, pages: int, cache: PagedKVCache):
        self.pool = PagePool(pages)
        shape = (config.layers, pages, cache.page_tokens, config.kv_heads, config.head_dim)
        pin = cache.k.device.type == "cuda"
        self.k = torch.zeros(shape, dtype=cache.k.dtype, pin_memory=pin)
        self.v = torch.zeros(shape, dtype=cache.v.dtype, pin_memory=pin)
        self.tables: dict[str, BlockTable] = {}

    def holds(self, rid: str) -> bool:
        return rid in self.tables

    def swap_out(self, cache: PagedKVCache, rid: str) -> None:
        table = cache.tables.get(rid)
        if table is None:
            raise KeyError(rid)
        if not self.pool.can_allocate(len(table.pages)):
            raise KVCacheFullError(
                f"host pool full: '{rid}' needs {len(table.pages)} page(s), {self.pool.free} free"
            )
        host = self.pool.allocate(len(table.pages))
        _copy(cache, table.pages, self, host)
        self.tables[rid] = BlockTable(host, table.tokens)
        cache.free(rid)

    def swap_in(self, cache: PagedKVCache, rid: str) -> None:
        table = self.tables[rid]
        device = cache.pool.allocate(len(table.pages))  # raises, changing nothing, when full
        _copy(self, table.pages, cache, device)
        cache.tables[rid] = BlockTable(device, table.tokens)
        self.pool.release(self.tables.pop(rid).pages)

    def free(self, rid: str) -> None:
        table = self.tables.pop(rid, None)
        if table is not None:
            self.pool.release(table.pages)


def _copy(source, source_pages: list[int], target, target_pages: list[int]) -> None:
    src = torch.tensor(source_pages, device=source.k.device)
    dst = torch.tensor(target_pages, device=target.k.device)
    for name in ("k", "v"):
        pages = getattr(source, name).index_select(1, src)
        getattr(target, name).index_copy_(1, dst, pages.to(target.k.device))
