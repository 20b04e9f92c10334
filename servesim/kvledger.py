"""The KV pages a run holds, step by step, counted by the engine's own page code.

A reader of a run file (the run viewer) that wants the pages in use drives a ``PageLedger``
with each step's batch and with the requests that leave, in the engine's order
(``state.EngineState.run_step``): the step's preemptions, swaps, prefill chunks and decodes,
then ``held`` is the count right after the step, before the requests it finished let theirs
go (``leave``). Nothing here restates a page rule:

- on a device with ``prefixCaching`` the pages are a ``prefixcache.BlockPool`` driven through
  ``apply_step`` and ``release``, as the engine and the grader's replay drive theirs, so a page
  that several requests share counts once and a request keeps its pages while its stream is
  paused;
- otherwise each holder takes ``rules.pages_for`` of its cached positions, growing by
  ``rules.pages_added``, and a swapped-out request holds host pages, not device pages.

A device without a page limit still has its pages counted (the engine keeps no count there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from . import prefixcache, rules


@dataclass(frozen=True)
class PageDevice:
    """The device fields page counting reads (a run file's ``device`` may hold others)."""

    page_tokens: int
    kv_pages: int | None = None
    prefix_caching: bool = False

    @classmethod
    def of_run(cls, device: Mapping) -> PageDevice:
        """The fields of a run file's ``device`` object (``pageTokens`` 16 when absent)."""
        return cls(
            int(device.get("pageTokens") or 16),
            device.get("kvPages"),
            bool(device.get("prefixCaching", False)),
        )


class PageLedger:
    """The pages held on ``device`` as a run's steps are applied (module docstring).

    ``prefixes`` maps request ids to their ``prefix`` segments (``(id, tokens)`` pairs), which
    the prefix cache keys pages by. A step the pool cannot serve raises
    ``prefixcache.PoolError``, as it does in the engine.
    """

    def __init__(self, device, prefixes: Mapping[str, Iterable] | None = None):
        self.device = device
        self.pool = prefixcache.pool_for(device, {k: tuple(v) for k, v in (prefixes or {}).items()})
        self.cache: dict[str, int] = {}  # holder -> cached positions, in (re)admission order
        self.host: dict[str, int] = {}  # swapped out -> cached positions
        self.pages = 0  # without a prefix cache: the holders' pages

    @classmethod
    def of_run(cls, run: Mapping) -> PageLedger:
        """A ledger for a full run entry: its device and its requests' prefixes."""
        prefixes = {
            r["id"]: [(s["id"], s["tokens"]) for s in r.get("prefix") or ()]
            for r in run["requests"]
        }
        return cls(PageDevice.of_run(run["device"]), prefixes)

    @property
    def held(self) -> int:
        """Device pages in use now (a shared page once)."""
        return self.pages if self.pool is None else self.pool.in_use

    def step(
        self,
        decode: Iterable[str],
        prefill: Iterable[tuple[str, int, int, int]],
        preempt: Iterable[str] = (),
        swap_out: Iterable[str] = (),
        swap_in: Iterable[str] = (),
    ) -> int:
        """Apply one step; ``prefill`` holds ``(id, tokens, cached, target)`` per chunk
        (``target``: the positions its prefill ends at, prompt + tokens emitted before a
        preemption). Returns ``held`` after it."""
        decode, prefill = list(decode), list(prefill)
        if self.pool is not None:
            self._pool_step(decode, prefill, list(preempt))
        for rid in preempt:
            self._drop(rid)
        for rid in swap_out:
            self.host[rid] = self._drop(rid)
        for rid in swap_in:
            self._grow(rid, self.host.pop(rid, 0))
        for rid, tokens, cached, _target in prefill:
            self._grow(rid, cached + tokens)
        for rid in decode:
            self._grow(rid, 1)
        return self.held

    def leave(self, rids: Iterable[str], ordered: bool = False) -> None:
        """``rids`` let their pages go, in (re)admission order as the engine frees the requests
        a step finished, or as given (``ordered``: cancelled ones, which the engine frees in
        the order it sees them); a request that holds none frees nothing."""
        order = {rid: n for n, rid in enumerate(self.cache)}
        for rid in rids if ordered else sorted(rids, key=lambda rid: order.get(rid, -1)):
            self._drop(rid)
            self.host.pop(rid, None)

    def _pool_step(self, decode, prefill, preempt) -> None:
        cache, order = self.cache, {rid: n for n, rid in enumerate(self.cache)}

        def state(rid):
            held = cache.get(rid, 0)
            return held, held, targets.get(rid, 0), order.get(rid, len(order))

        targets = {rid: target for rid, _, _, target in prefill}
        chunks = [(rid, tokens, cached) for rid, tokens, cached, _ in prefill]
        grows, starts = prefixcache.step_ops(decode, chunks, state)
        self.pool.apply_step(grows, preempt, starts)

    def _grow(self, rid: str, new: int) -> None:
        """``rid`` caches ``new`` positions more (a holder that starts joins last)."""
        held = self.cache.get(rid, 0)
        if self.pool is None:
            self.pages += rules.pages_added(self.device, held, new)
        self.cache[rid] = held + new

    def _drop(self, rid: str) -> int:
        """``rid`` holds nothing on the device from now on; returns the positions it held."""
        held = self.cache.pop(rid, 0)
        if self.pool is not None:
            self.pool.release(rid)
        else:
            self.pages -= rules.pages_for(self.device, held)
        return held


def release_order(rids: list[str], previous: dict | None) -> list[str]:
    """Cancelled ``rids`` in the order the engine let their pages go: as the releases listed
    in ``previous`` (the run file's event before the step that sees them cancelled) by its
    ``pageOps`` (a prefix cache run) order them, else as given (status time, trace order)."""
    ops = (previous or {}).get("pageOps") or ()
    first = {}
    for n, op in enumerate(ops):
        if op[0] == "release":
            first.setdefault(op[1], n)
    return sorted(rids, key=lambda rid: first.get(rid, len(ops)))
