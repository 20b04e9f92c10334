"""Shared-prefix KV pages (the prefix cache), as vLLM V1 (0.33.0) keeps them with prefix caching on.

A device with ``prefixCaching`` keeps its pages in a ``BlockPool``. The engine and the grader's
replay both drive one through ``apply_step``, so the rules below are written once.

- Keys. Page ``b`` of a sequence (its positions ``[b*P, (b+1)*P)``, P = ``pageTokens``) gets a
  key once it is full: the trace's prefix segments cut at ``(b+1)*P`` tokens when the prefix
  covers the whole page (``page_key``), else a key of the request's own (its content differs
  from everyone's, and stays its own across its preemptions). A key names the whole content up
  to the page's end, as vLLM's chained block hashes do, so two requests share their first k
  pages exactly when their segment lists agree up to ``k*P`` tokens.
- Hits. A sequence that starts (or restarts after a preemption) finds its pages from the first
  one while their keys are cached, capped at ``num_tokens - 1`` positions before rounding down
  to whole pages (``hit_tokens``): a fully cached prompt still computes its last page.
- References. A page is held once, with a count of the sequences whose table holds it; a hit
  adds one. A sequence that leaves or is preempted releases its pages last page first, once
  (its table goes); a page is freed only when its count reaches zero.
- Free queue. Taken pages come from its head: first pages freed without a key (last freed
  first), then never-used pages in id order, then freed pages with a key, least recently freed
  first. Taking a keyed page evicts its key. A hit on a freed page takes it out of the queue.
- Generations. Each take of a page from the free queue starts a new generation; a table entry
  remembers the generation it was given, and releasing an entry of an older generation (a stale
  event about a page since reused) is refused (``PoolError``), never applied.
- Records. With ``log`` set, each reference change is noted as ``[op, id, page, generation,
  refs after]``, ``op`` one of ``take`` (a page from the free queue), ``hit`` (a cached page
  shared) and ``release``; a run file lists them per step (``pageOps``) and the replay checks
  them against the pool it drove (``grader/verify/replay_pages.py``).
- Order within a step (vLLM's ``schedule()``): the holders that grow (decodes, partial
  prefills) in (re)admission order, each first releasing the step's named victims, in the
  order named, while the pool cannot serve it; the victims left are released next; then the
  sequences that start, in batch order, each taking its claimed hit before its new pages, so a
  later one may hit pages an earlier one of the same step is filling.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .pooljournal import Journal, Undo
from .prefixpages import Grow, Key, Page, PoolError, Start, hit_pages, page_key


@dataclass
class BlockPool(Journal):
    """The pages of a device with prefix caching (``pages`` None: no limit)."""

    page_tokens: int
    pages: int | None
    prefixes: dict[str, tuple] = field(default_factory=dict)  # id -> prefix segments
    page: dict[int, Page] = field(default_factory=dict)
    tables: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # id -> (page, gen)
    keyed: dict[str, int] = field(default_factory=dict)  # id -> pages of its table with keys
    cached: dict[Key, dict[int, None]] = field(default_factory=dict)  # key -> pages, oldest first
    head: list[int] = field(default_factory=list)  # freed without a key; the last is taken first
    tail: OrderedDict = field(default_factory=OrderedDict)  # freed with a key, oldest first
    fresh: int = 1  # the next never-used page id
    in_use: int = 0  # pages with refs > 0
    log: list | None = None  # when a list: every reference change, as ``page_op`` records
    undo: Undo | None = field(default=None, repr=False, compare=False)  # during ``trial``

    @property
    def free(self) -> float:
        """Pages a step may still take (freed ones with keys included, as vLLM counts)."""
        if self.pages is None:
            return float("inf")
        return len(self.head) + (self.pages - self.fresh + 1) + len(self.tail)

    def mark(self) -> tuple:
        """A summary any change through the methods alters (the engine compares it around
        each policy call; edits behind them show in the replay's ``page events``)."""
        return (self.in_use, self.fresh, len(self.head), len(self.tail), len(self.tables),
                len(self.cached), sum(map(len, self.tables.values())))  # fmt: skip

    def key(self, rid: str, page: int) -> Key:
        return page_key(rid, self.prefixes.get(rid, ()), page, self.page_tokens)

    def hit_tokens(self, rid: str, num_tokens: int) -> int:
        """Positions ``rid`` would find cached now if it started with ``num_tokens``."""
        found = 0
        while found < hit_pages(num_tokens, self.page_tokens) and self.cached.get(
            self.key(rid, found)
        ):
            found += 1
        return found * self.page_tokens

    def hit_refs(self, rid: str, num_tokens: int) -> list[int]:
        """Reference counts of the pages ``rid``'s hit would claim now, first page first; 0: no
        sequence holds it, it sits in the free queue (in ``free``) until a hit takes it."""
        pages = self.hit_tokens(rid, num_tokens) // self.page_tokens
        return [self.page[next(iter(self.cached[self.key(rid, n)]))].refs for n in range(pages)]

    def apply_step(
        self, grows: Iterable[Grow], victims: Iterable[str], starts: Iterable[Start]
    ) -> None:
        """Apply one step's page changes in vLLM's order (module docstring); ``PoolError``
        when a claim exceeds the cache or the pool cannot serve the step."""
        queue = list(victims)
        for grow in grows:
            need = self._need(grow.rid, grow.cache + grow.new)
            while need > self.free and queue:
                self.release(queue.pop(0))
            self._take(grow.rid, need)
            self._key_full(grow.rid, grow.cache + grow.new)
        for rid in queue:
            self.release(rid)
        for start in starts:
            self._start(start)

    def apply_batch(self, decode, chunks, victims, state) -> None:
        """``apply_step`` for a batch given as its decode ids, its prefill chunks (``(id,
        tokens, cached)`` triples) and its victims, ``state`` as ``step_ops`` reads it: how the
        engine, the grader's replay, the viewer and the live runner all apply a step."""
        grows, starts = step_ops(decode, chunks, state)
        self.apply_step(grows, victims, starts)

    def _start(self, start: Start) -> None:
        rid, size = start.rid, self.page_tokens
        available = self.hit_tokens(rid, start.num_tokens)
        if start.cached > available or start.cached % size:
            raise PoolError(
                "prefix hit",
                f"'{rid}' claims {start.cached} cached positions, the cache holds "
                f"{available} of its first positions (whole pages, at most num_tokens - 1)",
            )
        self._touch(rid)
        table = self.tables.setdefault(rid, [])
        for n in range(start.cached // size):
            number = next(iter(self.cached[self.key(rid, n)]))
            page = self._page(number)
            if page.refs == 0:
                self._touch_queues()
                del self.tail[number]
                self.in_use += 1
            page.refs += 1
            table.append((number, page.generation))
            self._note("hit", rid, number)
        self.keyed[rid] = len(table)
        end = start.cached + start.tokens
        self._take(rid, self._need(rid, end))
        self._key_full(rid, end)

    def _need(self, rid: str, positions: int) -> int:
        have = len(self.tables.get(rid, ()))
        return max(0, -(-positions // self.page_tokens) - have)

    def _take(self, rid: str, count: int) -> None:
        if count > self.free:
            raise PoolError("kvPages", f"'{rid}' needs {count} more KV pages, {self.free} free")
        self._touch(rid)
        table = self.tables.setdefault(rid, [])
        for _ in range(count):
            self._touch_queues()
            if self.head:
                number = self.head.pop()
            elif self.pages is None or self.fresh <= self.pages:
                number, self.fresh = self.fresh, self.fresh + 1
                self._page(number)
                self.page[number] = Page()
            else:
                number, _ = self.tail.popitem(last=False)
                self._evict(number)
            page = self._page(number)
            page.generation += 1
            page.refs = 1
            self.in_use += 1
            table.append((number, page.generation))
            self._note("take", rid, number)

    def _evict(self, number: int) -> None:
        page = self._page(number)
        holders = self._holders(page.key)
        del holders[number]
        if not holders:
            del self.cached[page.key]
        page.key = None

    def _key_full(self, rid: str, positions: int) -> None:
        """Every full page of ``rid`` up to ``positions`` gets its key (vLLM caches blocks as it
        allocates them, before the step computes them)."""
        self._touch(rid)
        table, full = self.tables[rid], positions // self.page_tokens
        for n in range(self.keyed.get(rid, 0), full):
            page = self._page(table[n][0])
            if page.key is None:
                page.key = self.key(rid, n)
                self._holders(page.key)
                self.cached.setdefault(page.key, {})[table[n][0]] = None
        self.keyed[rid] = max(self.keyed.get(rid, 0), full)

    def _note(self, op: str, rid: str, number: int) -> None:
        if self.log is not None:
            self.log.append([op, rid, number, self.page[number].generation, self.page[number].refs])

    # -- leaving -----------------------------------------------------------------------------

    def release(self, rid: str) -> int:
        """``rid`` gives up its pages, last page first, once; returns how many it held (0 for a
        sequence that holds none: released already, or never started)."""
        self._touch(rid)
        table = self.tables.pop(rid, None)
        self.keyed.pop(rid, None)
        if not table:
            return 0
        for number, generation in reversed(table):
            self.unref(rid, number, generation)
        return len(table)

    def unref(self, rid: str, number: int, generation: int) -> None:
        """One table entry of ``rid`` let go; the page is freed when no table holds it."""
        page = self._page(number)
        if page.generation != generation or page.refs <= 0:
            raise PoolError(
                "stale page event",
                f"'{rid}' releases page {number} of generation {generation}, which is now "
                f"generation {page.generation} with {page.refs} references",
            )
        page.refs -= 1
        self._note("release", rid, number)
        if page.refs == 0:
            self._touch_queues()
            self.in_use -= 1
            if page.key is None:
                self.head.append(number)
            else:
                self.tail[number] = None


def pool_for(device, requests: Mapping[str, tuple] | None = None) -> BlockPool | None:
    """The pool of a device with prefix caching (None without); ``requests`` maps ids to
    prefixes known up front (more may be added to ``pool.prefixes`` as requests arrive)."""
    if not getattr(device, "prefix_caching", False):
        return None
    return BlockPool(device.page_tokens, device.kv_pages, dict(requests or {}))


def seq_state(sequence):
    """``step_ops``'s ``state`` over the engine's sequences (``sequence(id)`` gives one): its
    cached positions, its prefill so far and target, its (re)admission order."""

    def state(rid):
        seq = sequence(rid)
        return seq.context_tokens, seq.prefilled, seq.prefill_target, seq.prefill_start

    return state


def chunks_of(batch) -> list[tuple[str, int, int]]:
    """A batch's prefill chunks as ``step_ops`` takes them: ``(id, tokens, cached)``."""
    return [(c.id, c.tokens, c.cached) for c in batch.prefill]


def step_ops(decode, prefill, state) -> tuple[list[Grow], list[Start]]:
    """A step's ``Grow`` and ``Start`` members from its decode ids and its prefill chunks
    (``(id, tokens, cached)`` triples); ``state(id)`` gives ``(cache, prefilled, target,
    admission)`` of a sequence before the step (``admission``: its (re)admission order)."""
    grows, starts = [], []
    for rid in decode:
        cache, _, _, order = state(rid)
        grows.append((order, Grow(rid, cache, 1)))
    for rid, tokens, cached in prefill:
        cache, prefilled, target, order = state(rid)
        if prefilled == 0:
            starts.append(Start(rid, cached, tokens, target))
        else:
            grows.append((order, Grow(rid, cache, tokens)))
    grows.sort(key=lambda pair: pair[0])
    return [grow for _, grow in grows], starts
