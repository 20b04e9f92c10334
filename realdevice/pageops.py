"""The engine's prefix-cache page operations, applied to the real KV cache (unit 09).

On a device with prefix caching the engine records every reference change of a step as
``[op, id, page, generation, refs after]`` (``Event.page_ops``, ``servesim.prefixcache``): a
``take`` from the free queue, a ``hit`` on a cached page, a ``release``. The real cache does
exactly these, on the same page numbers (engine page ``n`` is real page ``n - 1``), so the two
cannot drift: a hit shares the real page and its KV data, a release returns a page once.

An event's list holds the step's own operations (releases of its preemption victims, then the
takes and hits that give it room) and, after them, the releases that followed it: requests that
finished in it, and cancels seen before the next step. ``split`` cuts the list there; the real
step runs between the two parts. ``EngineTables`` records the engine's page tables before each
step, and ``check`` compares the real cache with them after every step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .kv_cache import PagedKVCache, PageTableError


def split(ops: list, preempt) -> tuple[list, list]:
    """``ops`` cut into what comes before the step runs and what comes after it: a release is
    the step's own only while it is the first release of one of its preemption victims."""
    victims, retaken = set(preempt), set()
    for index, (op, rid, *_) in enumerate(ops):
        if op != "release":
            retaken.add(rid)
        elif rid not in victims or rid in retaken:
            return ops[:index], ops[index:]
    return list(ops), []


def apply(cache: PagedKVCache, ops) -> None:
    """Do ``ops`` on the real cache, in order (engine page ``n``: real page ``n - 1``)."""
    for op, rid, page, _generation, refs in ops:
        real = page - 1
        if op == "take":
            cache.take(rid, real)
        elif op == "hit":
            cache.share(rid, real)
        elif op == "release":
            cache.unref(rid, real)
        else:
            raise PageTableError(f"unknown page operation {op!r}")
        if cache.refs.get(real, 0) != refs:
            raise PageTableError(
                f"page {page} after {op} by '{rid}': {cache.refs.get(real, 0)} references in "
                f"the real cache, {refs} in the engine's"
            )


Tables = dict[str, tuple[int, ...]]


@dataclass
class EngineTables:
    """The engine's page tables (id -> engine page numbers) before each step it runs, recorded
    by wrapping the policy: what ``view.pool`` holds when the policy returns a batch."""

    before_step: list[Tables] = field(default_factory=list)

    def wrap(self, policy):
        def recorded(view, *args, **kwargs):
            batch = policy(view, *args, **kwargs)
            if type(batch).__name__ != "Wait":
                pool = view.pool
                self.before_step.append(
                    {rid: tuple(n for n, _ in table) for rid, table in pool.tables.items()}
                )
            return batch

        return recorded

    def after(self, index: int) -> Tables:
        """The tables after step ``index`` and the releases that followed it (after the last
        step every request has left: none)."""
        following = index + 1
        return self.before_step[following] if following < len(self.before_step) else {}


def check(cache: PagedKVCache, engine: Tables, step: int) -> None:
    """The real cache holds exactly the engine's tables, each page once with as many
    references as tables name it, and nothing else."""
    real = {rid: tuple(p + 1 for p in table.pages) for rid, table in cache.tables.items()}
    if real != engine:
        differ = sorted(
            rid for rid in real.keys() | engine.keys() if real.get(rid) != engine.get(rid)
        )
        rid = differ[0]
        raise PageTableError(
            f"after step {step}: '{rid}' holds pages {list(real.get(rid, ()))} in the real "
            f"cache, {list(engine.get(rid, ()))} in the engine's"
        )
    counts: dict[int, int] = {}
    for table in engine.values():
        for page in table:
            counts[page - 1] = counts.get(page - 1, 0) + 1
    if counts != cache.refs or cache.pool.used != len(counts):
        raise PageTableError(
            f"after step {step}: the real cache holds {cache.pool.used} pages with references "
            f"{cache.refs}, the engine's tables {counts}"
        )
