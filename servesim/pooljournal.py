"""Dry runs of one step on a ``prefixcache.BlockPool``: on an independent copy (``copy``,
what a policy plans on), or applied to the pool itself and then undone (``trial``). The engine
checks every step a policy proposes with a trial: copying the whole pool for each would cost
what the pool holds, not what the step changes.

Every change ``BlockPool`` makes goes through one of the hooks below first, which notes what
it is about to change (once per trial); ``Undo.restore`` puts those back. Outside a trial each
hook is a read and nothing more.
"""

from __future__ import annotations

from collections import OrderedDict


class Journal:
    """Copy, trial and the trial's hooks, for ``BlockPool`` (whose fields they read)."""

    def copy(self):
        """An independent copy: a policy may plan a step on it (``pool_copy`` in a lab)."""
        return type(self)(
            self.page_tokens,
            self.pages,
            self.prefixes,
            {n: type(p)(p.refs, p.key, p.generation) for n, p in self.page.items()},
            {rid: list(table) for rid, table in self.tables.items()},
            dict(self.keyed),
            {key: dict(pages) for key, pages in self.cached.items()},
            list(self.head),
            OrderedDict(self.tail),
            self.fresh,
            self.in_use,
        )

    def trial(self, grows, victims, starts, read):
        """``read(pool)`` of this pool after ``apply_step(grows, victims, starts)``, with the
        pool then put back exactly as it was (``PoolError`` passes through, the pool put back
        too). What ``copy`` followed by ``apply_step`` gives, at the cost of what the step
        changes rather than of the whole pool: the engine checks every step with one."""
        if self.undo is not None:
            raise RuntimeError("a trial is already under way on this pool")
        self.undo, log, self.log = Undo(), self.log, None
        try:
            self.apply_step(grows, victims, starts)
            return read(self)
        finally:
            undo, self.undo = self.undo, None
            undo.restore(self)
            self.log = log

    def _page(self, number: int) -> object:
        """Page ``number`` (None if never taken), its state noted first during a trial."""
        page = self.page.get(number)
        if self.undo is not None and number not in self.undo.pages:
            self.undo.pages[number] = (
                None if page is None else (page.refs, page.key, page.generation)
            )
        return page

    def _touch(self, rid: str) -> None:
        """Note ``rid``'s table and keyed count before a trial changes them."""
        undo = self.undo
        if undo is not None and rid not in undo.tables:
            table = self.tables.get(rid)
            undo.tables[rid] = (None if table is None else list(table), self.keyed.get(rid))

    def _holders(self, key: tuple) -> dict[int, None] | None:
        """The pages cached under ``key``, noted first during a trial."""
        holders = self.cached.get(key)
        if self.undo is not None and key not in self.undo.cached:
            self.undo.cached[key] = None if holders is None else dict(holders)
        return holders

    def _touch_queues(self) -> None:
        """Note the free queue and the counters once, before a trial first changes them."""
        if self.undo is not None and self.undo.queues is None:
            self.undo.queues = (list(self.head), OrderedDict(self.tail), self.fresh, self.in_use)


class Undo:
    """What a ``trial`` changed, as it was before: pages, tables and keyed counts, cache
    entries (None: absent before), and the free queue with the counters."""

    __slots__ = ("cached", "pages", "queues", "tables")

    def __init__(self):
        self.pages: dict[int, tuple | None] = {}
        self.tables: dict[str, tuple] = {}
        self.cached: dict[tuple, dict | None] = {}
        self.queues: tuple | None = None

    def restore(self, pool) -> None:
        for number, was in self.pages.items():
            if was is None:
                pool.page.pop(number, None)
            else:
                page = pool.page[number]
                page.refs, page.key, page.generation = was
        for rid, (table, keyed) in self.tables.items():
            _put(pool.tables, rid, table)
            _put(pool.keyed, rid, keyed)
        for key, holders in self.cached.items():
            _put(pool.cached, key, holders)
        if self.queues is not None:
            pool.head, pool.tail, pool.fresh, pool.in_use = self.queues


def _put(mapping: dict, key, value) -> None:
    """``mapping[key] = value``, or no entry when ``value`` is None."""
    if value is None:
        mapping.pop(key, None)
    else:
        mapping[key] = value
